"""The room page's shared-store panel in a real browser: it loads itself after the page
(htmx, hx-trigger "load") with the room's figures. Headless Chromium against Daphne."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from agents.models import AgentProfile
from rooms.services import room_create
from sessions.ledger.sync import observations_sync
from sessions.models import Session, Task
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.gateway.factories import call, file_text, make_context, read_input
from tests.rooms.factories import make_user

A, B = file_text("src/a.py", 0, 40), file_text("src/b.py", 0, 20)


def reads(session: Session, sources) -> None:
    ctx = make_context()
    for source in sources:
        ctx.prepare()
        ctx.add_assistant("read", (call(source.call_id, path=source.read.path),))
        ctx.add_tool_result(source)
        observations_sync(session=session, ctx=ctx)


@pytest.mark.browser
def test_the_shared_store_panel_loads_with_the_rooms_figures(daphne_server):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Store demo")
    agent = AgentProfile.objects.create(name="reader", model="replay:demo.json")
    task = Task.objects.create(room=room, title="Read", objective="Read", created_by=person)
    first, second = (Session.objects.create(task=task, agent=agent, attempt=n) for n in (1, 2))
    reads(first, [read_input("c1", "src/a.py", A)])
    reads(second, [read_input("c1", "src/a.py", A), read_input("c2", "src/b.py", B)])
    a, b = len(A.encode()), len(B.encode())

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/rooms/{room.slug}/")
            panel = page.locator("#room-store")
            expect(panel.locator("[data-figure=stored]")).to_have_attribute("data-bytes", str(a + b))
            expect(panel.locator("[data-figure=per-session]")).to_have_attribute("data-bytes", str(2 * a + b))
            expect(panel.locator("[data-figure=shared-reads]")).to_have_attribute("data-count", "1")
            expect(panel).to_contain_text("3 tool results of 2 sessions")
        finally:
            browser.close()
