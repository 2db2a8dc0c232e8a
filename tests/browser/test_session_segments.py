"""A person asks for a new segment on the session page, in a real browser, and watches
it happen live: the request shows in the log, the segment mark arrives with its
handoff's sizes, and the session still verifies and merges. The ledger then groups
the observations by segment. Headless Chromium against Daphne and a real worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_TEST_COMMAND
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule, Segment, Session
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_user

DEMO_REPO = Path(__file__).resolve().parents[2] / "hub" / "demo_repo"
TIMEOUT_MS = 90_000


@pytest.mark.browser
def test_a_new_segment_asked_for_on_the_page_shows_live_with_its_handoff(daphne_server, celery_worker):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Segments", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")
    agent = AgentProfile.objects.create(name="Replay fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    ApprovalRule.objects.create(room=room, tool="shell", command_prefix=DEMO_TEST_COMMAND, decision="allow")
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the failing test pass.",
                       constraints="Don't change the tests.")
    session = session_start(task=task, agent=agent, actor=person)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#connection-status")).to_have_text("live")
            # The edit waits for a person: the session is parked while we ask.
            expect(page.locator("#session-state")).to_have_text("Awaiting Approval", timeout=TIMEOUT_MS)
            expect(page.locator("#session-decisions")).to_contain_text("D1")
            expect(page.locator("#session-decisions")).to_contain_text("Don't change the tests.")
            page.evaluate("window.loadedOnce = true")

            page.click("#new-segment")
            expect(page.locator("#session-notice .notice")).to_contain_text("A new segment starts at the next step")
            log = page.locator("#session-events")
            expect(log.locator("li[data-kind='segment.requested']")).to_contain_text("new segment asked for by ada")

            page.locator("#session-status .approval button[value=approve]").click()
            mark = log.locator("li[data-kind='segment.started']")
            expect(mark).to_contain_text("segment 2 starts", timeout=TIMEOUT_MS)
            expect(mark).to_contain_text("asked for by ada")
            expect(mark.locator(".handoff-sizes")).to_contain_text("decisions")
            expect(log.locator("li[data-kind=verify]")).to_contain_text("→ exit 0", timeout=TIMEOUT_MS)
            expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=TIMEOUT_MS)
            assert page.evaluate("window.loadedOnce") is True

            page.goto(f"/sessions/{session.pk}/ledger/")
            expect(page.locator("#ledger-segment-1 h3")).to_contain_text("Segment 1")
            expect(page.locator("#ledger-segment-2 h3")).to_contain_text("asked for by ada")
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#segment-2")).to_contain_text("segment 2 from step")
        finally:
            browser.close()

    session = Session.objects.get(pk=session.pk)
    assert session.state == "succeeded", session.reason
    segment = Segment.objects.get(session=session)
    assert "Don't change the tests." in segment.handoff and session.segment_requested_by == ""
