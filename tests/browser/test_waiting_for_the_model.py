"""Issue 28, point 4: a hung provider held a worker for 600 s per attempt, five attempts,
and the person watching saw no event for ten minutes. Now the profile bounds the whole
call, and the session page says "waiting for the model, N s" while a request is out. A
real worker calls a local provider that never answers in time; headless Chromium
watches the session page count, then the failure arrive with its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import AgentProfile
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.agents.providers.wire_server import WireServer, load_fixture
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_user

DEMO_REPO = Path(__file__).resolve().parents[2] / "hub" / "demo_repo"


@pytest.fixture
def hung_provider():
    server = WireServer()
    for _ in range(5):  # more than the call's limit lets the worker try
        server.reply("/v1/chat/completions", json_body=load_fixture("deepseek_chat_text.json"), delay=30)
    yield server
    server.close()


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_a_hung_provider_is_said_while_it_is_waited_for_and_ends_at_the_calls_limit(
        daphne_server, celery_worker, hung_provider):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Hung model", source=TemplateRepository(DEMO_REPO), check_command="")
    agent = AgentProfile.objects.create(name="Slow", model="openai:gpt-4.1", base_url=hung_provider.url + "/v1",
                                        api_key="sk-local", context_window=32_000, output_budget=2_000,
                                        answer_timeout_seconds=3, call_timeout_seconds=8)
    RoomAgent.objects.create(room=room, agent=agent)
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the failing test pass.")
    session = session_start(task=task, agent=agent, actor=person)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/sessions/{session.pk}/")
            waiting = page.locator("#model-waiting")
            expect(waiting).to_have_text(re.compile(r"waiting for the model, \d+ s"), timeout=30_000)
            first = int(re.search(r"(\d+) s", waiting.inner_text()).group(1))
            page.wait_for_timeout(2_000)
            assert int(re.search(r"(\d+) s", waiting.inner_text()).group(1)) >= first + 1  # it counts
            expect(page.locator("#session-state")).to_have_text("Failed", timeout=60_000)
            expect(waiting).to_be_hidden()
        finally:
            browser.close()

    session.refresh_from_db()
    assert "no answer within 3 s" in session.reason and "the call's limit is 8 s" in session.reason, session.reason
    calls = len(hung_provider.requests_to("/v1/chat/completions"))
    assert 1 <= calls < 5, calls  # the limit, not five attempts, ended it
