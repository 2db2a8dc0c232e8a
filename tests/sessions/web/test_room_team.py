"""The room's team panel: live sessions with the files their records of changes leave
changed (whatever tool made each), conflicts sessions resolved or left for a person,
agents' mentions; members only; no session's saved state read. In a real browser too:
the panel loads itself on the page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from playwright.sync_api import expect, sync_playwright

from rooms.services import message_post
from sessions.models import AgentMention, Review
from sessions.services.talk import message_binder
from sessions.services.tasks import task_create
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_agent
from tests.sessions.web.conftest import append, session_in


@pytest.fixture
def team_room(demo_room, owner, tmp_path):
    """A live session that changed two files (and made a scratch file it removed), one
    that resolved a conflict in two rounds,
    one whose conflict went to a person, and agents' mentions delivered and stopped."""
    builder, reviewer = make_agent("builder"), make_agent("tidier")
    task = task_create(room=demo_room, actor=owner, title="Add a mode", objective="Add mode()")
    live = session_in(task, builder, "running")
    for step, path, kind in ((1, "textstats.py", "modified"), (2, "scratch.py", "added"), (3, "modes.py", "added"),
                             (4, "scratch.py", "deleted")):
        append(live, "file.changed", {"step": step, "call_id": f"call_{step}", "path": path, "kind": kind,
                                      "sha256": "", "old_path": ""})

    other = task_create(room=demo_room, actor=owner, title="Speed up", objective="Faster")
    resolved = session_in(other, reviewer, "succeeded")
    append(resolved, "merge.handed_back", {"round": 1, "detail": "merge conflict in textstats.py"})
    append(resolved, "merge.handed_back", {"round": 2, "detail": "conflict markers left in textstats.py"})
    stuck = session_in(other, builder, "needs_merge")
    append(stuck, "merge.handed_back", {"round": 1, "detail": "merge conflict in README.md"})

    Review.objects.create(session=resolved, round=1, state="changes_requested", reviewer=reviewer)
    Review.objects.create(session=resolved, round=2, state="approved", reviewer=reviewer, decided_by=owner)
    Review.objects.create(session=live, round=1, state="pending", reviewer=reviewer)
    post = message_post(room=demo_room, author=None, kind="agent", text="tidier: look", agent=builder,
                        bind=message_binder(live))
    AgentMention.objects.create(message=post, sender=builder, session=resolved, state="delivered")
    AgentMention.objects.create(message=post, sender=builder, session=stuck, state="stopped", reason="cap")
    return demo_room


def test_the_team_panel_shows_who_works_on_what_and_the_conflicts_and_mentions(team_room, owner, login):
    client = login(owner)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("sessions:room_team", args=[team_room.slug])).content.decode()
    assert "builder</strong> on" in page and "Add a mode" in page
    assert "<code>modes.py</code> <code>textstats.py</code>" in page
    assert "resolved by their sessions: <strong>1</strong>; 1 left for a person" in page
    assert "in 2 rounds" in page
    assert "1 delivered" in page and "1 stopped" in page
    assert "1 approved,\n      1 sent back with changes (1 decided by people), " in page
    assert "round 1 of builder" in page and "1 waiting" in page
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "gateway_state" not in sql and "runtime_state" not in sql and "room_status_notes" not in sql
    assert len(queries.captured_queries) <= 11


def test_an_empty_room_says_nobody_is_at_work_and_strangers_see_nothing(room, owner, stranger, login):
    assert "Nobody is at work" in login(owner).get(reverse("sessions:room_team", args=[room.slug])).content.decode()
    assert login(stranger).get(reverse("sessions:room_team", args=[room.slug])).status_code == 404


@pytest.mark.browser
def test_the_room_page_loads_the_team_panel_in_a_browser(team_room, owner, daphne_server):
    owner.set_password(PASSWORD)
    owner.save()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, owner.get_username())
            page.goto(f"/rooms/{team_room.slug}/")
            team = page.locator("#room-team")
            expect(team).to_contain_text("builder on Add a mode")
            expect(team.locator(".team__files code")).to_have_text(["modes.py", "textstats.py"])
            expect(team.locator("[data-figure=conflicts-resolved]")).to_contain_text("1 left for a person")
            expect(team.locator("[data-figure=mentions]")).to_contain_text("1 stopped by the loop guard")
            expect(team.locator("[data-figure=reviews]")).to_contain_text("1 waiting")
        finally:
            browser.close()
