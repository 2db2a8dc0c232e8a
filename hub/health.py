"""Real pings to each service the hub depends on."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return Check(True, connection.vendor)
    except Exception as exc:  # any driver error means "down"; the detail says which
        return Check(False, f"{type(exc).__name__}: {exc}")


def check_redis() -> Check:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        return Check(True, "PONG")
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")


def check_celery(timeout: float = 2.0) -> Check:
    from hub.celery import app

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    if not replies:
        return Check(False, "no worker answered")
    return Check(True, f"{len(replies)} worker(s)")


def run_checks() -> dict[str, Check]:
    return {"database": check_database(), "redis": check_redis(), "celery": check_celery()}
