"""Issue 30, point 3: at a phone's 390 px the room page was 514 px wide, the session 464
and the ledger 2,081 (its receipt text never wrapped, 2,121 px on the desktop too); the
nav hid Log out; the room's side stacked totals, store, keys and the whole settings form
in 300 px. Here a real session (a recorded reader in a small window, a real worker) folds
and merges, and every page a person reaches from it is opened in headless
Chromium at 390, 768 and 1280 px: nothing is wider than the screen, Log out is in
view, and the console stays clean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from agents.models import AgentProfile
from endpoint.keys import gateway_key_create
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD
from tests.browser.test_session_workspace import wider_than_the_screen
from tests.rooms.factories import make_user

WIDTHS = (390, 768, 1280)
STEPS, WINDOW = 16, 8_000
# A path with no space to break at, in every receipt the ledger shows after a fold.
LONG_PATH = "parser/a_module_whose_name_has_no_space_to_break_at_anywhere_along_its_length_{k}.py"


BODY = "".join(f"def rule_{i}(record):\n    return record.get('field_{i}', 0)\n" for i in range(30))


def a_folding_recording(steps: int) -> dict:
    """A reader of one 60-line module a step: in a small window the early reads fold."""
    turns = [{"text": f"Step {k}: the next part.", "tool_calls": [
        {"name": "read_file", "arguments": {"path": LONG_PATH.format(k=k)}}]} for k in range(steps)]
    return {"model": "scripted-reader", "turns": [*turns, {"text": "All parts are read."}]}


def a_merged_session_that_folded(hub_workers, tmp_path):
    """A real worker runs a recorded reader in a small window: it folds, verifies, merges."""
    person = make_user("ada", password=PASSWORD)
    template = tmp_path / "template"
    (template / "parser").mkdir(parents=True)
    (template / "parser" / "__init__.py").write_text("")
    for k in range(STEPS):
        (template / LONG_PATH.format(k=k)).write_text(BODY)
    (template / "test_parser.py").write_text("def test_the_package_imports():\n    import parser  # noqa: F401\n")
    room = room_create(owner=person, name="A room with a rather long name for a phone's screen",
                       source=TemplateRepository(template), check_command="python -m pytest -q -p no:cacheprovider")
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "reader.json").write_text(json.dumps(a_folding_recording(STEPS)))
    hub_workers(ATRIUM_REPLAY_DIR=str(replays))
    agent = AgentProfile.objects.create(name="Reader", model="replay:reader.json", context_window=WINDOW,
                                        output_budget=1_000, created_by=person)
    RoomAgent.objects.create(room=room, agent=agent)
    gateway_key_create(room=room, actor=person, agent_id=agent.pk, name="a key for aider on the laptop")
    task = task_create(room=room, actor=person, title="Read the parser", objective="Read every part of the parser.",
                       constraints="Don't change the tests.")
    return session_start(task=task, agent=agent, actor=person)


def log_in_at(browser, base_url: str, width: int) -> tuple[Page, list[str]]:
    page = browser.new_context(base_url=base_url, viewport={"width": width, "height": 800}).new_page()
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto("/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Your rooms")).to_be_visible()
    return page, problems


@pytest.mark.browser
def test_every_page_of_a_finished_session_fits_a_phone_a_tablet_and_a_desktop(daphne_server, hub_workers, tmp_path):
    screenshots = Path(os.environ.get("ATRIUM_SCREENSHOTS") or tmp_path)  # .ci/run keeps them
    session = a_merged_session_that_folded(hub_workers, tmp_path)
    task, room, agent = session.task, session.task.room, session.agent
    pages = {
        "rooms": "/", "room": f"/rooms/{room.slug}/", "session": f"/sessions/{session.pk}/",
        "ledger": f"/sessions/{session.pk}/ledger/", "agents": "/agents/", "agent": f"/agents/{agent.pk}/",
        "agent form": f"/agents/{agent.pk}/edit/", "new task": f"/rooms/{room.slug}/tasks/new/",
        "intent": f"/tasks/{task.pk}/intent/", "settings": f"/rooms/{room.slug}/settings/",
        "keys": f"/rooms/{room.slug}/gateway-keys/", "evals": "/evals/",
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page, _ = log_in_at(browser, daphne_server.url, 1280)
            page.goto(pages["session"])
            expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=180_000)
            page.goto(pages["ledger"])
            expect(page.locator("#ledger-receipts pre.receipt__text").first).to_contain_text("a_module_whose_name")
            # Every "receipt" link of the table lands on its receipt, archived with its segment or not.
            anchors = page.eval_on_selector_all("a[href^='#receipt-']", "links => links.map(a => a.hash)")
            assert anchors and all(page.locator(anchor).count() == 1 for anchor in anchors), anchors
            too_wide: dict[str, list[str]] = {}
            for width in WIDTHS:
                page, problems = log_in_at(browser, daphne_server.url, width)
                for name, url in pages.items():
                    page.goto(url)
                    page.wait_for_load_state("networkidle")
                    expect(page.get_by_role("button", name="Log out")).to_be_in_viewport()
                    page.screenshot(path=screenshots / f"{name.replace(' ', '-')}-{width}.png", full_page=True)
                    if wide := wider_than_the_screen(page):
                        too_wide[f"{name} at {width} px"] = wide[:8]
                assert problems == [], (width, problems)
            assert not too_wide, "\n".join(f"{where}: {' '.join(what)}" for where, what in too_wide.items())
        finally:
            browser.close()
