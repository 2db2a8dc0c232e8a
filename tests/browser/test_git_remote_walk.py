"""A person's walk with the git remote, in Chromium and with the real git client: make a
token on the profile page, read the clone command on the room page, clone, push a
commit, and see the room say so without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from rooms.services import room_create
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in, open_room_tab
from tests.remote.git_client import person_git
from tests.rooms.factories import make_user


@pytest.mark.browser
def test_make_a_token_clone_push_and_the_room_hears_it(daphne_server, tmp_path):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Walk room")
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.get_by_role("link", name="ada").click()
            page.get_by_label("Name").fill("laptop")
            page.get_by_role("button", name="Make a token").click()
            token = page.locator("#access-token-text").inner_text()
            assert token.startswith("atr-pat-")
            page.reload()
            expect(page.locator("#access-token-list")).to_contain_text("laptop")
            expect(page.locator("body")).not_to_contain_text(token)

            page.goto(f"/rooms/{room.slug}/")
            open_room_tab(page, "Keys")
            command = page.locator("#git-remote-url").inner_text()
            url = command.removeprefix("git clone ")
            assert url == f"{daphne_server.url}/rooms/{room.slug}.git"

            with_token = url.replace("http://", f"http://ada:{token}@")
            run("clone", "--quiet", with_token, str(clone))
            (clone / "hello.txt").write_text("hello from ada's laptop\n")
            run("add", "hello.txt", cwd=clone)
            run("commit", "--quiet", "-m", "Hello from a laptop", cwd=clone)
            run("push", "--quiet", "origin", "main", cwd=clone)
            expect(page.locator("#messages")).to_contain_text("ada pushed main")
        finally:
            browser.close()
    assert (tmp_path / "clone" / "hello.txt").exists()
