"""Issue 30, point 5: `manage.py start` logged each 403 with two tracebacks."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from tests.rooms.factories import make_agent, make_room, make_user


@pytest.mark.django_db
def test_a_denied_request_is_one_line_without_a_traceback(client, caplog):
    owner, viewer = make_user(), make_user()
    room = make_room(owner, viewers=[viewer])
    client.force_login(viewer)
    with caplog.at_level(logging.INFO):
        response = client.post(reverse("agents:agent_assign", args=[room.slug]), {"agent": make_agent().pk})
    assert response.status_code == 403
    (denied,) = [record for record in caplog.records if record.name == "django.request"]
    assert denied.getMessage() == f"Forbidden (Permission denied): /rooms/{room.slug}/agents/"
    assert denied.exc_info is None and "Traceback" not in caplog.text
    # Printed once: django.request no longer passes it on to the root's handler as well.
    assert not logging.getLogger("django.request").propagate


def test_a_server_error_keeps_its_traceback():
    from hub.log_filters import ClientErrorsWithoutTraceback

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys
        exc_info = sys.exc_info()
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), exc_info)
    record.status_code = 500
    assert ClientErrorsWithoutTraceback().filter(record) and record.exc_info is exc_info
