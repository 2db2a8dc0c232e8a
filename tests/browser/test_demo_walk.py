"""Issue 30, point 6: what a newcomer does, in headless Chromium against a real Daphne
and a real worker and beat: sign in with the credentials seed_demo prints, open the Demo room and
its session, watch the fold, answer the agent's question (a steer on the desktop, the
room chat on the phone), decide its approval from the card's diff, see it merge, and
review the ledger. At 1280×800 and at 390×844: no page wider than the screen, no
console error, a screenshot of each page (kept by .ci/run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from sessions.models import Session
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS
from tests.browser.test_session_workspace import on_first_screen, wider_than_the_screen
from tests.hub.test_seed_demo import printed_password, seed

# A worker takes the session within seconds; the walk waits for what a person would see.
SEEN_WITHIN_MS = 90_000


class Walk:
    """One newcomer's browser at one size: every page it opens is checked and kept."""

    def __init__(self, browser, base_url: str, size: dict, screenshots: Path) -> None:
        self.page: Page = browser.new_context(base_url=base_url, viewport=size).new_page()
        self.page.set_default_timeout(15_000)
        self.name = f"demo-{size['width']}"
        self.screenshots = screenshots
        self.problems: list[str] = []
        self.page.on("console", lambda message: message.type == "error" and self.problems.append(message.text))
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))

    def check(self, what: str) -> None:
        self.page.wait_for_load_state("networkidle")
        assert wider_than_the_screen(self.page) == [], (self.name, what)
        self.page.screenshot(path=self.screenshots / f"{self.name}-{what}.png", full_page=True)


def walk_the_demo(walk: Walk, password: str, room_slug: str, session_pk: int, *, answer_in_chat: bool) -> None:
    page = walk.page
    page.goto("/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Your rooms")).to_be_visible()
    walk.check("rooms")

    page.click(f"a[href='/rooms/{room_slug}/']")
    expect(page.get_by_role("heading", name="Demo")).to_be_visible()
    walk.check("room")
    page.locator(f"a[href='/sessions/{session_pk}/']").first.click()
    expect(page.locator("#connection-status")).to_have_text("live")

    # The sample text it read first is folded away; then it asks and waits for the person.
    expect(page.locator("#session-events > li[data-kind='fold']")).to_contain_text("fold #1", timeout=SEEN_WITHIN_MS)
    expect(page.locator("#session-state")).to_have_text("Waiting", timeout=SEEN_WITHIN_MS)
    expect(page.locator("#session-events")).to_contain_text("Found it:")
    walk.check("session-asks")
    if answer_in_chat:
        page.goto(f"/rooms/{room_slug}/")
        expect(page.locator("#room")).to_contain_text("Found it:")
        expect(page.locator("#connection-status")).to_have_text("live")
        page.fill("#composer-text", "@Demo fixer go ahead, and keep the tests as they are.")
        page.keyboard.press("Enter")
        # The hub's copy, not the line the page shows while it sends: leaving before the hub
        # has it would take the message away with the socket.
        expect(page.locator("#messages .message--pending")).to_have_count(0)
        expect(page.locator("#messages .message--chat").last).to_contain_text("go ahead, and keep the tests")
        page.goto(f"/sessions/{session_pk}/")
    else:
        page.fill("#session-steer textarea", "Go ahead, and keep the tests as they are.")
        page.click("#session-steer button[type=submit]")

    # Its edit waits on a card that shows the diff, on the first screen.
    card = page.locator(".approval").first
    expect(card).to_be_visible(timeout=SEEN_WITHIN_MS)
    expect(card.locator(".diff__del")).to_have_text(["-    return ordered[middle]"])
    expect(card.locator(".diff__add")).to_have_count(3)
    expect(card.locator(".approval__always")).to_contain_text("edit_file on textstats.py.")
    page.goto(f"/sessions/{session_pk}/")  # opened afresh: a reload would keep the scroll
    expect(page.locator("#connection-status")).to_have_text("live")
    assert on_first_screen(page, page.locator(".approval button[value=approve]").first), walk.name
    walk.check("session-approval")
    page.locator(".approval button[value=approve]").first.click()

    expect(page.locator("#session-state")).to_have_text("Succeeded", timeout=SEEN_WITHIN_MS)
    expect(page.locator("#session-events > li[data-kind='verify']")).to_contain_text("exit 0")
    expect(page.locator("#session-events > li[data-kind='merge']")).to_have_count(1)
    walk.check("session-merged")

    page.get_by_role("link", name="observation ledger").click()
    expect(page.locator("#ledger-receipts")).to_contain_text("samples/middle.txt")
    walk.check("ledger")
    assert walk.problems == [], (walk.name, walk.problems)


@pytest.mark.browser
def test_a_newcomer_walks_the_demo_on_a_desktop_and_on_a_phone(daphne_server, hub_workers, tmp_path):
    screenshots = Path(os.environ.get("ATRIUM_SCREENSHOTS") or tmp_path)
    password = printed_password(seed())
    seed("--again")  # a second Demo room with the bug, and a session for it: one for each walk
    sessions = [(s.task.room.slug, s.pk) for s in Session.objects.select_related("task__room").order_by("pk")]
    hub_workers()
    hub_workers.beat()  # as `manage.py start` runs it: its sweep wakes a session a wake missed
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            desktop = Walk(browser, daphne_server.url, {"width": 1280, "height": 800}, screenshots)
            walk_the_demo(desktop, password, *sessions[0], answer_in_chat=False)
            phone = Walk(browser, daphne_server.url, {"width": 390, "height": 844}, screenshots)
            walk_the_demo(phone, password, *sessions[1], answer_in_chat=True)
        finally:
            browser.close()
