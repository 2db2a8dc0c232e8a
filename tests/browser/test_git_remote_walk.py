"""A person's walk with the room's git remote, in Chromium and with the real git client,
against a real Daphne and a real worker: make a token on the profile page, read the clone
command on the room page, clone, push a commit, see the room say so; the session that
starts next works on the pushed commit; review its change on its Changes page, approve
its edit, see it merge, and pull the result."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from rooms.models import Room
from sessions.models import Session
from tests.browser.test_demo_walk import SEEN_WITHIN_MS
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, open_room_tab
from tests.hub.test_seed_demo import printed_password, seed
from tests.remote.git_client import person_git


def _log_in(browser, base_url: str, password: str):
    page = browser.new_context(base_url=base_url).new_page()
    page.set_default_timeout(15_000)
    page.goto("/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Your rooms")).to_be_visible()
    return page


@pytest.mark.browser
def test_token_clone_push_the_session_sees_it_review_approve_pull(daphne_server, hub_workers, tmp_path):
    password = printed_password(seed())
    room = Room.objects.get()
    session = Session.objects.get()  # queued: it starts once a worker runs
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _log_in(browser, daphne_server.url, password)
            page.get_by_role("link", name="demo", exact=True).click()
            page.get_by_label("Name").fill("laptop")
            page.get_by_role("button", name="Make a token").click()
            token = page.locator("#access-token-text").inner_text()
            assert token.startswith("atr-pat-")
            page.reload()
            expect(page.locator("#access-token-list")).to_contain_text("laptop")
            expect(page.locator("body")).not_to_contain_text(token)

            page.goto(f"/rooms/{room.slug}/")
            open_room_tab(page, "Keys")
            url = page.locator("#git-remote-url").inner_text().removeprefix("git clone ")
            assert url == f"{daphne_server.url}/rooms/{room.slug}.git"
            run("clone", "--quiet", url.replace("http://", f"http://demo:{token}@"), str(clone))
            (clone / "NOTES.md").write_text("Notes from the demo's laptop\n")
            run("add", "NOTES.md", cwd=clone)
            run("commit", "--quiet", "-m", "Notes from a laptop", cwd=clone)
            pushed = run("rev-parse", "HEAD", cwd=clone).stdout.strip()
            run("push", "--quiet", "origin", "main", cwd=clone)
            expect(page.locator("#messages")).to_contain_text("demo pushed main")
        finally:
            browser.close()

    hub_workers()  # the session starts now, from main with the person's commit in it
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = _log_in(browser, daphne_server.url, password)
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#session-state")).to_have_text("Waiting", timeout=SEEN_WITHIN_MS)
            page.fill("#session-steer textarea", "Go ahead, and keep the tests as they are.")
            page.click("#session-steer button[type=submit]")
            card = page.locator(".approval").first
            expect(card).to_be_visible(timeout=SEEN_WITHIN_MS)

            # The change so far, reviewed as a diff before the edit is approved.
            page.locator("#session-changes-link").click()
            expect(page.locator("#session-changes")).to_be_visible()
            page.go_back()
            page.locator(".approval button[value=approve]").first.click()
            expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=SEEN_WITHIN_MS)

            page.locator("#session-changes-link").click()
            expect(page.locator("#change-counts")).to_have_text("1 file changed")
            changed = page.locator("details[data-path='textstats.py']")
            expect(changed.locator("tr.del td.diff-code")).to_contain_text(["return ordered[middle]"])
            expect(page.locator("#change-files")).not_to_contain_text("NOTES.md")  # the person's, not the session's
        finally:
            browser.close()

    run("pull", "--quiet", "--ff-only", cwd=clone)
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (clone / "textstats.py").read_text()
    run("fetch", "--quiet", "origin", f"atrium/session-{session.pk}", cwd=clone)
    assert run("merge-base", "--is-ancestor", pushed, "FETCH_HEAD", cwd=clone, check=False).returncode == 0
