"""The session's Changes page in Chromium: files listed with their counts, code
highlighted, and a commit on the running session's branch shown without a reload, the
file a person opened still open."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from rooms.repository.worktrees import worktree_commit, worktree_create
from sessions.models import Session, Task
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_agent, make_room, make_user


@pytest.mark.browser
def test_the_changes_page_follows_the_running_branch(daphne_server, tmp_path):
    person = make_user("ada", password=PASSWORD)
    room = make_room(person, "Changes walk")
    task = Task.objects.create(room=room, title="Grow", objective="Grow", created_by=person)
    session = Session.objects.create(task=task, agent=make_agent(), attempt=1, state=Session.State.RUNNING)
    worktree = worktree_create(repo=Path(room.repo_path), worktrees_dir=tmp_path / "wt", session_id=session.pk)
    big = "".join(f"value_{n} = {n}\n" for n in range(500))  # past 400 lines: closed at first
    (worktree.path / "big.py").write_text(big)
    (worktree.path / "small.py").write_text("def hello():\n    return 'hi'\n")
    worktree_commit(worktree=worktree, message="first")
    Session.objects.filter(pk=session.pk).update(branch=worktree.branch)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/sessions/{session.pk}/")
            page.locator("#session-changes-link").click()
            expect(page.locator("#change-counts")).to_have_text("2 files changed")
            small = page.locator("details[data-path='small.py']")
            big_file = page.locator("details[data-path='big.py']")
            expect(small).to_have_attribute("open", "")
            expect(small.locator("span.k", has_text="def")).to_be_visible()
            expect(big_file).not_to_have_attribute("open", "")
            big_file.locator("summary").click()
            expect(big_file.locator("td.diff-code", has_text="value_499 = 499")).to_be_visible()
            small.locator("summary").click()  # closed by the person

            (worktree.path / "third.txt").write_text("three\n")
            worktree_commit(worktree=worktree, message="second")
            expect(page.locator("#change-counts")).to_have_text("3 files changed", timeout=15_000)
            expect(page.locator("details[data-path='big.py']")).to_have_attribute("open", "")
            expect(page.locator("details[data-path='small.py']")).not_to_have_attribute("open", "")
        finally:
            browser.close()
