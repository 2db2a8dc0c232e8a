"""Issue 30, point 5: `manage.py start` logged each 403 with two tracebacks."""

from __future__ import annotations

import io
import logging
import sys

import pytest
from django.urls import reverse

from hub.log_filters import ClientErrorsWithoutTraceback
from tests.rooms.factories import make_agent, make_room, make_user


@pytest.fixture
def console():
    """What the hub's console handler prints."""
    (handler,) = [h for h in logging.getLogger().handlers
                  if any(isinstance(f, ClientErrorsWithoutTraceback) for f in h.filters)]
    printed = io.StringIO()
    previous = handler.setStream(printed)
    yield printed
    handler.setStream(previous)


@pytest.mark.django_db
def test_a_denied_request_is_printed_once_without_a_traceback(client, console, settings):
    settings.DEBUG = True  # where Django's own console handler used to print it a second time
    owner, viewer = make_user(), make_user()
    room = make_room(owner, viewers=[viewer])
    client.force_login(viewer)
    response = client.post(reverse("rooms:agent_assign", args=[room.slug]), {"agent": make_agent().pk})
    assert response.status_code == 403
    printed = console.getvalue()
    assert printed.count(f"Forbidden (Permission denied): /rooms/{room.slug}/agents/") == 1, printed
    assert "Traceback" not in printed


def test_a_bad_host_is_one_line_too(client, console):
    assert client.get("/", HTTP_HOST="attacker.example").status_code == 400
    printed = console.getvalue()
    assert printed.count("Invalid HTTP_HOST header") == 1 and "Traceback" not in printed, printed


def test_a_server_error_keeps_its_traceback_and_still_reaches_the_admins_mail():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), exc_info)
    record.status_code = 500
    assert ClientErrorsWithoutTraceback().filter(record) and record.exc_info is exc_info
    request_logger = logging.getLogger("django.request")
    assert request_logger.propagate and "mail_admins" in [h.name for h in logging.getLogger("django").handlers]
