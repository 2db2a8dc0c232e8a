"""The session page's charts and analysis in a real browser: the context chart renders
with its limits, and a new step appears on it live (no reload) once a person approves
the edit the session was waiting for. Headless Chromium against Daphne and a real Celery
worker in subprocesses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_TEST_COMMAND
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_user

DEMO_REPO = Path(__file__).resolve().parents[2] / "hub" / "demo_repo"
SESSION_TIMEOUT_MS = 90_000


@pytest.mark.browser
def test_the_context_chart_renders_and_a_new_step_appears_live(daphne_server, celery_worker, tmp_path):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Chart demo", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")
    agent = AgentProfile.objects.create(name="Replay fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    ApprovalRule.objects.create(room=room, tool="shell", command_prefix=DEMO_TEST_COMMAND, decision="allow")
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the failing test pass.")
    session = session_start(task=task, agent=agent, actor=person)
    deadline = time.monotonic() + 90
    while session.state != "awaiting_approval":  # the edit waits for a person, at step 3
        assert time.monotonic() < deadline, celery_worker.hub_process.log_tail()
        time.sleep(0.3)
        session.refresh_from_db()

    # The database is touched only before the browser starts and after it stops (see
    # tests/browser/test_session_live.py).
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#connection-status")).to_have_text("live")
            chart = page.locator("#context-chart")
            page.click("#tab-charts")
            expect(chart).to_be_visible()
            expect(chart).to_have_attribute("data-requests", "3")
            expect(chart.locator("circle.chart__point")).to_have_count(3)
            for limit in ("window", "ceiling", "trigger"):
                expect(chart.locator(f"line.chart__limit--{limit}")).to_have_count(1)
            expect(page.locator("#session-analysis")).to_contain_text("Model calls")
            page.click("#tab-breakdown")
            expect(page.locator("#prefix-breakdown tr[data-part=tools]")).to_be_visible()
            page.click("#tab-charts")
            page.evaluate("window.loadedOnce = true")

            page.locator("#session-status .approval button[value=approve]").click()
            expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=SESSION_TIMEOUT_MS)
            expect(page.locator("#context-chart")).to_have_attribute("data-requests", "5", timeout=15_000)
            expect(page.locator("#context-chart circle.chart__point")).to_have_count(5)
            expect(page.locator("#session-analysis")).to_contain_text("Verify")
            assert page.evaluate("window.loadedOnce") is True, "the page reloaded instead of updating live"
            page.locator("#session-insights").screenshot(path=str(tmp_path / "insights.png"))
        finally:
            browser.close()

    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert (tmp_path / "insights.png").stat().st_size > 0
