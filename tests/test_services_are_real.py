"""The suite really talks to the services the environment names."""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlparse

import pytest
import redis
from django.conf import settings
from django.db import connection

REQUIRE_REAL = os.environ.get("ATRIUM_REQUIRE_REAL_SERVICES") == "1"


@pytest.mark.django_db
def test_database_is_postgresql_when_database_url_names_it():
    url = os.environ.get("DATABASE_URL", "")
    if REQUIRE_REAL:
        assert url.startswith("postgres"), "CI must run against PostgreSQL"
    if not url.startswith("postgres"):
        assert connection.vendor == "sqlite"
        pytest.skip("DATABASE_URL is not a PostgreSQL URL")
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), current_database(), inet_server_port()")
        version, database, port = cursor.fetchone()
    assert version.startswith("PostgreSQL")
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # pytest-django's database of each xdist worker
    assert database == "test_" + urlparse(url).path.lstrip("/") + (f"_{worker}" if worker else "")
    assert port == (urlparse(url).port or 5432)


def test_redis_is_the_server_redis_url_names():
    url = os.environ["REDIS_URL"]
    assert url == settings.REDIS_URL
    client = redis.Redis.from_url(url)
    key = f"atrium-test:{uuid.uuid4()}"
    client.set(key, "ping", ex=30)
    # A second, independent connection sees the key: one real server, not a fake.
    assert redis.Redis.from_url(url).get(key) == b"ping"
    info = client.info("server")
    if REQUIRE_REAL:
        assert url.startswith("redis://")
    if url.startswith("redis://"):
        assert info["tcp_port"] == (urlparse(url).port or 6379)
    else:
        assert url.startswith("unix://")
        assert info["tcp_port"] == 0  # the embedded server listens on its socket only
