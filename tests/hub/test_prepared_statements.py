"""On PostgreSQL a statement a connection runs again and again is prepared, and the
server plans it once (DB_PREPARE_THRESHOLD): the gateway key's look-up spent 4.4 of its
4.5 ms planning. Off (0), every statement is planned each time it arrives."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.db import connection

from endpoint.keys import _lookup, token_digest

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's prepared statements")]


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_the_key_look_up_is_planned_once_then_run_from_its_plan():
    assert settings.DB_PREPARE_THRESHOLD > 0
    for _ in range(settings.DB_PREPARE_THRESHOLD):
        assert _lookup(token_digest("atr-gw-no-such-key"), None) is None
    assert not any('FROM "agents_gatewaykey"' in statement for statement in _prepared())
    assert _lookup(token_digest("atr-gw-no-such-key"), None) is None
    (look_up,) = [statement for statement in _prepared() if 'FROM "agents_gatewaykey" k' in statement]
    assert re.search(r'k\."digest" = \$\d+ ', look_up)  # the value bound, not written in
