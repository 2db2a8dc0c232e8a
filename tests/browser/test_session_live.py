"""A person watches a session live in a real browser: create a task on the room page,
start it with a replay agent, see the room's task list follow the session, approve
its edit on the session page, and watch the events arrive until verify passes and the
session succeeds, all without a reload. Headless Chromium (Debian's package) driven by
Playwright, against Daphne and a real Celery worker in subprocesses."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connections, transaction
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, Route, expect, sync_playwright

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_TEST_COMMAND
from rooms import broadcast
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.events import session_event_append
from sessions.models import Approval, ApprovalRule, Session, SessionEvent, Task
from sessions.services.approvals import approval_request
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_agent, make_room, make_user

DEMO_REPO = Path(__file__).resolve().parents[2] / "hub" / "demo_repo"
SESSION_TIMEOUT_MS = 90_000


@pytest.mark.browser
def test_a_session_started_on_the_room_page_is_watched_live_to_a_verified_merge(daphne_server, celery_worker):
    person = make_user("ada", password=PASSWORD)
    room = room_create(owner=person, name="Live demo", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")
    agent = AgentProfile.objects.create(name="Replay fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    # Tests may run without asking; the edit waits for a person, so the session cannot
    # finish before the session page is open.
    ApprovalRule.objects.create(room=room, tool="shell", command_prefix=DEMO_TEST_COMMAND, decision="allow")

    # Playwright's sync API runs an event loop in this thread while it is open, and
    # Django refuses ORM calls next to a running loop: the database is touched only
    # before the browser starts and after it has stopped.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            start_a_task(page, f"/rooms/{room.slug}/")
            watch_and_approve(page)
        finally:
            browser.close()

    session = Session.objects.get(task__room=room)
    assert session.state == "succeeded", session.reason
    assert Approval.objects.get(session=session).decided_by == person
    assert SessionEvent.objects.filter(session=session, kind="verify", payload__exit_code=0).exists()


def start_a_task(page: Page, room_path: str) -> None:
    page.goto(room_path)
    expect(page.locator("#connection-status")).to_have_text("live")
    page.click("#task-new summary")
    page.fill("#id_title", "Fix median")
    page.fill("#id_objective", "Make the failing test pass.")
    page.fill("#id_constraints", "Don't change the tests.")
    page.click("#task-create button[type=submit]")
    expect(page.locator("#room-tasks .task h3")).to_have_text(["Fix median"])
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads

    page.click("#room-tasks button:has-text('Start with Replay fixer')")
    expect(page.locator("#work-status .notice")).to_contain_text("Replay fixer started on “Fix median” (attempt 1).")
    # The room socket reports each state change and the task list reloads itself.
    row = page.locator("#room-tasks table.sessions tbody tr")
    expect(row).to_have_attribute("data-state", "awaiting_approval", timeout=SESSION_TIMEOUT_MS)
    assert page.evaluate("window.loadedOnce") is True
    row.locator("a:has-text('watch')").click()


def watch_and_approve(page: Page) -> None:
    expect(page.locator("#connection-status")).to_have_text("live")
    expect(page.locator("#session-state")).to_have_text("Awaiting Approval")
    card = page.locator("#session-status .approval")
    expect(card).to_contain_text("edit_file")
    expect(card).to_contain_text("textstats.py")
    expect(page.locator("#session-gauge")).to_contain_text("window 32,000")
    assert page.locator("#session-events li[data-kind=verify]").count() == 0
    page.evaluate("window.loadedOnce = true")

    card.locator("button[value=approve]").click()
    expect(page.locator("#session-notice .notice")).to_contain_text("edit_file approved.")
    log = page.locator("#session-events")
    expect(log.locator("li[data-kind=verify]")).to_contain_text(
        "verify #1: python -m pytest -q → exit 0", timeout=SESSION_TIMEOUT_MS)
    expect(log.locator("li[data-kind=merge]")).to_contain_text("merged")
    expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=SESSION_TIMEOUT_MS)
    expect(log.locator("li[data-kind='approval.decided']")).to_contain_text("approval approved by ada")
    assert page.evaluate("window.loadedOnce") is True
    # Every event once, in order: the live stream neither skipped nor repeated one.
    seqs = [int(s) for s in page.locator("#session-events > li").evaluate_all("items => items.map(i => i.dataset.seq)")]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.browser
def test_an_approval_asked_for_while_the_status_reloads_is_shown(daphne_server):
    """The status region reloads when an event changes it. An approval whose event
    arrives while a reload is under way, read before the approval was, is shown by
    the reload after it (htmx dropped that one: it was queued on the region the
    stale answer replaced, and the page showed no approval until the next event)."""
    person = make_user("ada", password=PASSWORD)
    room = make_room(person, "Status room")
    task = Task.objects.create(room=room, title="Fix it", objective="Fix it", created_by=person)
    session = Session.objects.create(task=task, agent=make_agent("fixer"))
    held: list = []
    hold_the_first_reload = holding_the_first_answer(held, meanwhile=lambda: approval_request(
        session=session, call_id="c1", tool="edit_file", arguments={"path": "a.py", "old": "1", "new": "2"}))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.route(f"**/sessions/{session.pk}/status/", hold_the_first_reload)
            page.goto(f"/sessions/{session.pk}/")
            expect(page.locator("#connection-status")).to_have_text("live")
            in_a_thread(lambda: transaction.atomic()(session_event_append)(session, "step.started", {"step": 1}))
            expect(page.locator("#session-status .approval")).to_contain_text("edit_file", timeout=10_000)
            assert len(held) == 1
        finally:
            browser.close()


def holding_the_first_answer(held: list, *, meanwhile: Callable[[], object]) -> Callable[[Route], None]:
    """A route handler for a region's reloads: the first is answered as it was read,
    but only after ``meanwhile`` changed what it shows and that change's event reached
    the page (which asks for another reload while the first is under way); the answer
    goes into ``held``. Later reloads go through."""

    def handle(route: Route) -> None:
        if held:
            route.continue_()
            return
        stale = route.fetch()  # read now, before the change
        held.append(stale)
        in_a_thread(meanwhile)
        assert broadcast.flush(timeout=10)
        time.sleep(1)  # its event reaches the page, whose reload waits behind this one
        with contextlib.suppress(PlaywrightError):  # the page may have let this request go
            route.fulfill(response=stale)

    return handle


def in_a_thread(work) -> None:
    """The ORM from a thread of its own: Playwright's sync API runs an event loop in this one."""
    failed = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            failed.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    if failed:
        raise failed[0]
