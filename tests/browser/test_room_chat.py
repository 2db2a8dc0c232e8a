"""Two people in two real browsers: a message typed in one shows up in the other
without a reload. Headless Chromium (Debian's package) driven by Playwright, against
Daphne running the hub in a subprocess."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from rooms.models import Membership, Message, Room
from tests.rooms.factories import make_user

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PASSWORD = "browser test password"


def log_in(browser: Browser, base_url: str, username: str) -> Page:
    page = browser.new_context(base_url=base_url).new_page()
    page.set_default_timeout(15_000)
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Your rooms")).to_be_visible()
    return page


def open_room_tab(page: Page, name: str) -> None:
    """Open one of the room page's tabs once the Team panel above them has loaded itself:
    a click while that panel grows lands where the tab was a moment before."""
    expect(page.locator("#room-team")).not_to_contain_text("Loading who works")
    tab = page.get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")


@pytest.mark.browser
def test_a_message_sent_in_one_browser_appears_in_the_other_without_reload(daphne_server):
    make_user("alice", password=PASSWORD)
    make_user("bob", password=PASSWORD)

    # Playwright's sync API runs an event loop in this thread while it is open, and
    # Django refuses ORM calls next to a running loop: the database is touched only
    # before the browser starts and after it has stopped.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            chat_in_two_browsers(browser, daphne_server.url)
        finally:
            browser.close()

    room = Room.objects.get(name="Browser room")
    assert Membership.objects.get(room=room, user__username="bob").role == "member"
    assert list(Message.objects.filter(room=room, kind="chat").values_list("author__username", "text")) == [
        ("alice", "Hello from Alice"),
        ("bob", "Hi Alice"),
    ]


def chat_in_two_browsers(browser: Browser, base_url: str) -> None:
    alice = log_in(browser, base_url, "alice")
    alice.click("text=New room")
    alice.fill("#id_name", "Browser room")
    alice.click("button:has-text('Create room')")
    expect(alice.get_by_role("heading", name="Browser room")).to_be_visible()
    expect(alice.locator("#connection-status")).to_have_text("live")
    room_path = alice.url.removeprefix(base_url)

    # The owner adds bob from the people panel (an htmx form: the panel is swapped in place).
    alice.fill("#members input[name=username]", "bob")
    alice.click("#members button:has-text('Add')")
    expect(alice.locator("#members")).to_contain_text("bob")

    bob = log_in(browser, base_url, "bob")
    bob.goto(room_path)
    expect(bob.locator("#connection-status")).to_have_text("live")
    bob.evaluate("window.loadedOnce = true")  # gone if the page reloads

    alice.fill("#composer-text", "Hello from Alice")
    alice.keyboard.press("Enter")
    expect(bob.locator("#messages .message--chat")).to_contain_text(["Hello from Alice"])
    expect(alice.locator("#messages .message--chat")).to_contain_text(["Hello from Alice"])
    assert alice.locator("#composer-text").input_value() == ""

    bob.fill("#composer-text", "Hi Alice")
    bob.click("#composer button[type=submit]")
    expect(alice.locator("#messages .message--chat").last).to_contain_text("Hi Alice")
    expect(bob.locator("#messages .message--chat")).to_have_count(2)
    assert bob.evaluate("window.loadedOnce") is True
