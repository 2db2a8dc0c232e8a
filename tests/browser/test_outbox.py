"""A message typed while the hub is down is kept and sent once it is back: Daphne is
stopped under an open room page, the person sends a message (it waits in the page's
outbox), Daphne comes back on the same port, and the message is stored exactly once.
Headless Chromium against real Daphne processes."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from rooms.models import Message
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.conftest import _free_port, start_daphne
from tests.rooms.factories import make_room, make_user


@pytest.mark.browser
def test_a_message_typed_while_the_hub_is_down_is_sent_once_when_it_is_back(transactional_db, tmp_path):
    owner = make_user("ada", password=PASSWORD)
    room = make_room(owner, "Outbox room")
    port = _free_port()
    server = start_daphne(tmp_path / "daphne-1.log", port=port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = log_in(browser, server.url, "ada")
                page.goto(f"/rooms/{room.slug}/")
                expect(page.locator("#connection-status")).to_have_text("live")
                page.evaluate("window.loadedOnce = true")

                server.hub_process.stop()
                expect(page.locator("#connection-status")).to_contain_text("offline", timeout=15_000)
                page.fill("#composer-text", "typed while the hub was down")
                page.keyboard.press("Enter")
                pending = page.locator("#messages .message--pending")
                expect(pending).to_contain_text("typed while the hub was down")
                expect(page.locator("#composer-error")).to_contain_text("Offline: your message is kept")
                assert page.locator("#composer-text").input_value() == ""

                server = start_daphne(tmp_path / "daphne-2.log", port=port)
                expect(page.locator("#connection-status")).to_have_text("live", timeout=30_000)
                expect(pending).to_have_count(0)
                expect(page.locator("#messages .message--chat")).to_have_count(1)
                expect(page.locator("#messages .message--chat")).to_contain_text("typed while the hub was down")
                expect(page.locator("#composer-error")).to_be_hidden()
                assert page.evaluate("window.loadedOnce") is True
            finally:
                browser.close()
    finally:
        server.hub_process.stop()
    assert Message.objects.filter(room=room, kind="chat", text="typed while the hub was down").count() == 1
