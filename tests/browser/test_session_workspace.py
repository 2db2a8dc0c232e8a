"""Issue 30, point 2: the session page buried the live log and the approvals ~2,600 px
down, under the figures. Now, in headless Chromium at 1280×800, a session 60 steps long
that waits for an approval shows the approval (its edit as a diff) and the log's newest
rows on the first screen; the log follows new events in its own box and folds away the
hub's own hand-offs unless asked; the figures and the charts are
behind tabs (the request breakdown's tab: test_session_insights.py) that stay chosen when
the region reloads; at a phone's
390 px the approval comes first and nothing is wider than the screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect, sync_playwright

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.models import SessionEvent, Task
from sessions.services.approvals import approval_request
from tests.browser.test_live_controls import in_thread
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_room, make_user
from tests.sessions.web.conftest import append, session_in

STEPS = 60


def a_long_session_waiting_for_an_edit():
    person = make_user("ada", password=PASSWORD)
    agent = AgentProfile.objects.create(name="Fixer", model="replay:demo-fix-median.json", context_window=32_000)
    room = make_room(person, "Workspace")
    RoomAgent.objects.create(room=room, agent=agent)
    task = Task.objects.create(room=room, title="Fix median", objective="Make the failing test pass.")
    session = session_in(task, agent, "running", step=STEPS)
    append(session, "session.claimed", {"worker": "vm:1:abc"})
    for step in range(1, STEPS + 1):
        append(session, "step.started", {"step": step, "projection": 1_000 + 300 * step, "anchored": True,
                                         "trigger": 25_600, "ceiling": 28_800, "window": 32_000})
        append(session, "model.reply", {
            "step": step, "text": f"Step {step}: reading the next module.", "input_tokens": 1_000 + 300 * step,
            "cached_input_tokens": 900, "output_tokens": 40,
            "tool_calls": [{"id": f"call-{step}", "name": "read_file", "arguments": {"path": f"src/m{step}.py"}}]})
        append(session, "tool.result", {"step": step, "call_id": f"call-{step}", "tool": "read_file",
                                         "purpose": f"read src/m{step}.py", "is_error": False, "served": "text",
                                         "tokens": 250, "preview": "def median(values):\n    ...\n" * 8})
    arguments = {"path": "stats.py", "old": "return ordered[len(ordered) // 2]",
                 "new": "middle = len(ordered) // 2\nreturn (ordered[middle - 1] + ordered[middle]) / 2"}
    append(session, "model.reply", {"step": STEPS + 1, "text": "Fix the even case.", "input_tokens": 20_000,
                                     "cached_input_tokens": 18_000, "output_tokens": 60,
                                     "tool_calls": [{"id": "call-edit", "name": "edit_file", "arguments": arguments}]})
    approval = approval_request(session=session, call_id="call-edit", tool="edit_file", arguments=arguments)
    session.state = "awaiting_approval"
    session.save(update_fields=["state"])
    append(session, "session.state_changed", {"state": "awaiting_approval"})
    return session, approval


def on_first_screen(page: Page, locator: Locator) -> bool:
    """Wholly inside the viewport as the page opened (the window not scrolled)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (box is not None and page.evaluate("window.scrollY") == 0 and box["y"] >= 0 and box["x"] >= 0
            and box["y"] + box["height"] <= size["height"] and box["x"] + box["width"] <= size["width"])


def wider_than_the_screen(page: Page) -> list[str]:
    """Elements whose right edge passes the viewport's (what makes a page scroll sideways)."""
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                     && getComputedStyle(e).position !== 'fixed' && !e.closest('[hidden]'))
        .filter(e => { for (let p = e.parentElement; p; p = p.parentElement) {
                         const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return false; }
                       return true; })
        .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.'))""")


@pytest.mark.browser
def test_the_log_and_the_pending_approval_are_on_the_first_screen(daphne_server, tmp_path):
    session, approval = a_long_session_waiting_for_an_edit()
    events = SessionEvent.objects.filter(session=session).count()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.set_viewport_size({"width": 1280, "height": 800})
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#connection-status")).to_have_text("live")
            card = page.locator(f"#approval-{approval.pk}")
            for button in ("approve", "deny", "always"):
                assert on_first_screen(page, card.locator(f"button[value={button}]")), button
            expect(card.locator(".diff__del")).to_have_text("-return ordered[len(ordered) // 2]")
            expect(card.locator(".diff__add")).to_have_count(2)
            expect(card.locator(".approval__always")).to_contain_text("edit_file on stats.py.")
            rows = page.locator("#session-events > li")
            expect(rows).to_have_count(events)
            assert on_first_screen(page, rows.last), "the newest event is off the first screen"
            assert wider_than_the_screen(page) == []
            page.screenshot(path=str(tmp_path / "session-1280.png"))

            # The hub's own hand-offs are folded away unless asked for.
            claimed = page.locator("#session-events > li[data-kind='session.claimed']")
            expect(claimed).to_be_hidden()
            page.check("#show-plumbing")
            expect(claimed).to_have_count(1)
            claimed.scroll_into_view_if_needed()
            expect(claimed).to_be_visible()
            page.uncheck("#show-plumbing")
            expect(claimed).to_be_hidden()
            page.locator("#session-events").evaluate("log => { log.scrollTop = log.scrollHeight; }")

            # A new event while the log shows its newest rows: the log follows it.
            in_thread(lambda: append(session, "intent.changed", {"step": STEPS + 1, "by": "ada"}))
            expect(rows).to_have_count(events + 1)
            expect(rows.last).to_be_in_viewport()

            # The figures are a tab; the charts and the breakdown are the others.
            expect(page.locator("#session-analysis")).to_be_visible()
            expect(page.locator("#context-chart")).to_be_hidden()
            page.click("#tab-charts")
            expect(page.locator("#context-chart")).to_be_visible()
            expect(page.locator("#session-analysis")).to_be_hidden()
            page.locator("#tab-charts").press("ArrowRight")  # no request recorded: no breakdown, back to the first
            expect(page.locator("#tab-figures")).to_be_focused()
            expect(page.locator("#session-analysis")).to_be_visible()
            page.locator("#tab-figures").press("End")
            expect(page.locator("#tab-charts")).to_be_focused()
            # The region reloads after a step; the tab chosen stays chosen.
            page.evaluate("document.querySelector('#session-insights').dataset.before = 'yes'")
            in_thread(lambda: append(session, "step.started", {
                "step": STEPS + 2, "projection": 21_000, "anchored": True, "trigger": 25_600, "ceiling": 28_800,
                "window": 32_000}))
            expect(page.locator("#session-insights[data-before]")).to_have_count(0)  # reloaded
            expect(page.locator("#context-chart")).to_be_visible()
            expect(page.locator("#tab-charts")).to_have_attribute("aria-selected", "true")

            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(f"/sessions/{session.pk}/")  # opened afresh: a reload would keep the scroll
            expect(page.locator("#connection-status")).to_have_text("live")
            assert on_first_screen(page, card.locator("button[value=approve]")), "a phone sees the approval first"
            assert wider_than_the_screen(page) == []
            page.screenshot(path=str(tmp_path / "session-390.png"), full_page=True)
        finally:
            browser.close()
