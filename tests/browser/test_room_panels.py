"""Issue 30, point 3: assigning an agent left the Gateway keys panel saying "assign an
agent", and tasks got no *Start with* button until a reload. In headless Chromium, on
one page load: assigning and unassigning an agent refreshes the keys panel, the tasks'
start buttons and the settings' reviewer choice; naming a reviewer in the settings puts
the reviewer badge in the agents panel; a panel someone is typing in waits; the room's
figures and settings sit behind tabs."""

from __future__ import annotations

import pytest
from django.db import transaction
from playwright.sync_api import expect, sync_playwright

from sessions.events import session_event_append
from sessions.models import Session, Task
from sessions.runtime import states
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in, open_room_tab
from tests.browser.test_session_live import holding_the_first_answer, in_a_thread
from tests.rooms.factories import make_agent, make_room, make_user


@pytest.mark.browser
def test_assigning_an_agent_refreshes_every_panel_that_names_the_rooms_agents(daphne_server):
    owner = make_user("ada", password=PASSWORD)
    make_agent("Fixer", owner=owner)
    room = make_room(owner, "Panels")
    Task.objects.create(room=room, title="Fix median", objective="Make the failing test pass.")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.goto(f"/rooms/{room.slug}/")
            keys, tasks, agents = page.locator("#gateway-keys"), page.locator("#room-tasks"), page.locator("#agents")
            settings = page.locator("#room-settings")
            expect(page.locator("#room-totals")).to_be_visible()
            expect(keys).to_be_hidden()  # behind its tab
            open_room_tab(page, "Keys")
            expect(keys).to_contain_text("Assign an agent to the room to make a key")
            expect(tasks.get_by_role("button", name="Start with Fixer")).to_have_count(0)
            page.evaluate("window.loadedOnce = true")

            agents.get_by_role("button", name="Assign").click()
            expect(agents).to_contain_text("Fixer")
            expect(keys.locator("#gateway-key-new")).to_be_visible()
            expect(keys).not_to_contain_text("Assign an agent")
            expect(tasks.get_by_role("button", name="Start with Fixer")).to_be_visible()
            open_room_tab(page, "Settings")
            expect(settings.locator("#reviewer-agent option", has_text="Fixer")).to_have_count(1)

            settings.locator("#reviewer-agent").select_option(label="Fixer")
            settings.get_by_role("button", name="Save reviewer").click()
            expect(settings).to_contain_text("Review is on")
            expect(agents.locator("#reviewer-badge")).to_be_visible()

            agents.get_by_role("button", name="unassign").click()
            expect(agents).to_contain_text("No agent is assigned")
            expect(tasks.get_by_role("button", name="Start with Fixer")).to_have_count(0)
            expect(settings.locator("#reviewer-agent option", has_text="Fixer")).to_have_count(0)
            open_room_tab(page, "Keys")
            expect(keys).to_contain_text("Assign an agent to the room to make a key")

            # Someone typing in the settings when an agent is assigned: that panel waits, the text stays.
            open_room_tab(page, "Settings")
            check = settings.locator("#id_check_command")
            check.fill("python -m pytest -q -x")
            agents.get_by_role("button", name="Assign").click()
            expect(tasks.get_by_role("button", name="Start with Fixer")).to_be_visible()  # the others reloaded
            expect(check).to_have_value("python -m pytest -q -x")
            assert page.evaluate("window.loadedOnce") is True  # all of it without a reload
        finally:
            browser.close()


def outside_their_panel(page) -> list[str]:
    """Elements whose right edge passes the panel or card they sit in (what the screen's
    edge alone misses: a button spilling out of its card while the card still fits)."""
    return page.evaluate("""() => [...document.querySelectorAll('.panel *, .card *')]
        .filter(e => e.getClientRects().length && !e.closest('[hidden]'))
        .filter(e => { for (let p = e.parentElement; p; p = p.parentElement) {
                         if (p.matches('.panel, .card')) return e.getBoundingClientRect().right > p.getBoundingClientRect().right + 1;
                         const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return false; }
                       return false; })
        .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.'))""")


@pytest.mark.browser
def test_on_a_phone_a_new_key_and_the_agents_buttons_stay_inside_their_panels(daphne_server):
    """Issue 30: at 390 px "unassign" and a new key's token overflowed their cards."""
    owner = make_user("ada", password=PASSWORD)
    make_agent("A fixer with a rather long name for a phone", owner=owner)
    room = make_room(owner, "Phone")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(f"/rooms/{room.slug}/")
            agents, keys = page.locator("#agents"), page.locator("#gateway-keys")
            open_room_tab(page, "Keys")
            # The panel loads itself after the page: assigned before that, it would miss the news.
            expect(keys).to_contain_text("Assign an agent to the room to make a key")
            agents.get_by_role("button", name="Assign").click()
            expect(agents.get_by_role("button", name="unassign")).to_be_visible()
            keys.locator("#gateway-key-new summary").click()
            keys.locator("#id_name").fill("laptop aider on the train")
            keys.get_by_role("button", name="Make key").click()
            expect(keys.locator("#gateway-key-token code").first).to_contain_text("atr-gw-")
            expect(agents.get_by_role("button", name="unassign")).to_be_visible()
            assert outside_their_panel(page) == []
        finally:
            browser.close()


@pytest.mark.browser
def test_a_state_change_that_arrives_while_the_task_list_reloads_is_shown(daphne_server):
    """The task list reloads when a session of the room changes. A change whose event
    arrives while a reload is under way, read before the change was, is shown by the
    reload after it (htmx queued that one on the region the stale answer replaced, and
    dropped it: the list showed the state from before until the next change)."""
    owner = make_user("ada", password=PASSWORD)
    room = make_room(owner, "Reloads")
    task = Task.objects.create(room=room, title="Fix median", objective="Make the failing test pass.")
    session = Session.objects.create(task=task, agent=make_agent("Fixer", owner=owner), state=states.QUEUED)
    held: list = []

    def becomes(state: str) -> None:
        with transaction.atomic():
            Session.objects.filter(pk=session.pk).update(state=state)
            session_event_append(session, "session.state_changed", {"state": state})

    hold_the_first_reload = holding_the_first_answer(held, meanwhile=lambda: becomes(states.AWAITING_APPROVAL))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.route(f"**/rooms/{room.slug}/tasks/", hold_the_first_reload)
            page.goto(f"/rooms/{room.slug}/")
            row = page.locator(f"#session-row-{session.pk}")
            expect(row).to_have_attribute("data-state", states.QUEUED)
            expect(page.locator("#connection-status")).to_have_text("live")
            in_a_thread(lambda: becomes(states.RUNNING))
            expect(row).to_have_attribute("data-state", states.AWAITING_APPROVAL, timeout=10_000)
            assert len(held) == 1
        finally:
            browser.close()
