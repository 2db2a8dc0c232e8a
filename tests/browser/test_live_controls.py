"""Controls follow the session's state live, and owners set up the room on its page.
Headless Chromium (Debian's package) driven by Playwright, against Daphne in a
subprocess: a cancelled session's approval card disappears from every open page, an
ended session's steer form turns into a note without a reload, and an owner changes
the check command and an approval rule on the room page (with the preview)."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction
from playwright.sync_api import Browser, Page, expect, sync_playwright

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.models import Approval, ApprovalRule, Session, Task
from sessions.services.approvals import approval_request
from sessions.services.lifecycle import session_transition
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in, open_room_tab
from tests.rooms.factories import make_room, make_user
from tests.sessions.web.conftest import session_in


def in_thread(work) -> None:
    """Database work while Playwright's loop runs in this thread: Django refuses ORM
    calls next to a running loop, so it happens in a thread of its own."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def a_session(state: str) -> tuple[Session, Approval | None]:
    person = make_user("ada", password=PASSWORD)
    agent = AgentProfile.objects.create(name="Fixer", model="replay:demo-fix-median.json")
    room = make_room(person, "Live controls")
    RoomAgent.objects.create(room=room, agent=agent)
    task = Task.objects.create(room=room, title="Deploy", objective="Ship it")
    session = session_in(task, agent, state)
    approval = None
    if state == "awaiting_approval":
        approval = approval_request(session=session, call_id="call-1", tool="shell",
                                    arguments={"command": "make deploy"})
    return session, approval


def open_session(browser: Browser, base_url: str, session: Session) -> Page:
    page = log_in(browser, base_url, "ada")
    page.goto(f"/sessions/{session.pk}/")
    expect(page.locator("#connection-status")).to_have_text("live")
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads
    return page


@pytest.mark.browser
def test_cancelling_during_an_approval_removes_the_card_from_every_open_page(daphne_server):
    session, approval = a_session("awaiting_approval")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            watcher = open_session(browser, daphne_server.url, session)
            canceller = open_session(browser, daphne_server.url, session)
            for page in (watcher, canceller):
                expect(page.locator(f"#approval-{approval.pk}")).to_contain_text("make deploy")
            canceller.on("dialog", lambda dialog: dialog.accept())
            canceller.click("#session-status button:has-text('Cancel session')")
            for page in (canceller, watcher):
                expect(page.locator("#session-state")).to_have_text("Cancelled")
                expect(page.locator(f"#approval-{approval.pk}")).to_have_count(0)
                expect(page.locator("#session-events li[data-kind='approval.decided']")).to_contain_text(
                    "approval expired: the session cancelled")
                assert page.evaluate("window.loadedOnce") is True
        finally:
            browser.close()
    approval.refresh_from_db()
    assert approval.state == Approval.State.EXPIRED and approval.decided_by is None


@pytest.mark.browser
def test_an_ended_sessions_steer_form_turns_into_a_note_without_a_reload(daphne_server):
    session, _ = a_session("running")

    def finish() -> None:
        with transaction.atomic():
            session_transition(Session.objects.get(pk=session.pk), "succeeded", reason="merged",
                               expected="running")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = open_session(browser, daphne_server.url, session)
            expect(page.locator("#session-steer form")).to_be_visible()
            in_thread(finish)  # as a worker would: committed, then broadcast
            expect(page.locator("#session-state")).to_have_text("Succeeded")
            expect(page.locator("#session-steer form")).to_have_count(0)
            expect(page.locator("#session-steer")).to_contain_text("This session has ended")
            assert page.evaluate("window.loadedOnce") is True
        finally:
            browser.close()


@pytest.mark.browser
def test_an_owner_changes_the_check_command_and_a_rule_on_the_room_page(daphne_server):
    owner = make_user("ada", password=PASSWORD)
    make_user("bea", password=PASSWORD)
    room = make_room(owner, "Settings room")
    from rooms.services import membership_add

    membership_add(room=room, actor=owner, username="bea", role="member")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/rooms/{room.slug}/")
            open_room_tab(page, "Settings")  # the settings sit behind a tab
            settings = page.locator("#room-settings")
            expect(settings.locator("#room-settings-form")).to_be_visible()
            page.evaluate("window.loadedOnce = true")

            page.fill("#id_check_command", "python -m pytest -q")
            page.check("#id_allow_network")
            page.click("#room-settings-form button[type=submit]")
            expect(settings).to_contain_text("Settings saved")
            expect(settings).to_contain_text("they may use the network")
            expect(page.locator("#id_check_command")).to_have_value("python -m pytest -q")
            expect(page.locator("#id_allow_network")).to_be_checked()

            page.click("#rule-new summary")
            page.select_option("#rule-create select[name=tool]", "shell")
            page.fill("#rule-create input[name=command_prefix]", "make deploy")
            page.select_option("#rule-create select[name=decision]", "deny")
            page.click("#rule-create button[type=submit]")
            expect(page.locator("#approval-rules")).to_contain_text("commands running make deploy in any way")

            # The preview answers on request, and then as the person types.
            page.select_option("#id_preview_tool", "shell")
            page.fill("#id_sample", "make deploy --prod")
            page.click("#rule-preview-form button[type=submit]")
            expect(page.locator("#preview-result")).to_have_attribute("data-decision", "deny")
            page.fill("#id_sample", "make test")
            expect(page.locator("#preview-result")).to_have_attribute("data-decision", "ask")
            expect(page.locator("#messages")).to_contain_text("ada added an approval rule: deny")
            assert page.evaluate("window.loadedOnce") is True

            # A member sees the settings but no form to change them.
            member = log_in(browser, daphne_server.url, "bea")
            member.goto(f"/rooms/{room.slug}/")
            expect(member.locator("#room-settings")).to_contain_text("python -m pytest -q")
            expect(member.locator("#room-settings-form")).to_have_count(0)
            expect(member.locator("#rule-create")).to_have_count(0)
        finally:
            browser.close()
    room.refresh_from_db()
    assert (room.check_command, room.allow_network) == ("python -m pytest -q", True)
    rule = ApprovalRule.objects.get(room=room)
    assert (rule.tool, rule.command_prefix, rule.decision, rule.created_by) == ("shell", "make deploy", "deny", owner)
