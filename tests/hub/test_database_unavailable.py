"""Issue 28: a page asked for while the database is away (a restart, a dropped
connection) was a 500 "Something went wrong". It is a 503 that says to wait, with
Retry-After, and the next request once the database is back is served as usual."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.rooms.factories import make_user


@pytest.mark.django_db(transaction=True)
def test_a_page_while_the_database_cannot_be_reached_is_a_503_that_says_to_wait(client, settings):
    settings.DEBUG = False
    client.force_login(make_user("pat"))
    client.raise_request_exception = False
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-atrium-folder/atrium.sqlite3"
    else:
        connection.settings_dict["PORT"] = "1"  # nothing listens there: as a server that is down
    try:
        away = client.get("/")
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
    assert away.status_code == 503 and away["Retry-After"] == "5"
    assert b"cannot reach its database" in away.content and b"Traceback" not in away.content
    assert client.get("/").status_code == 200  # back: served as usual
