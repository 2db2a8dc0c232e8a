"""Real pings to each service the hub depends on."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import redis
from asgiref.sync import async_to_sync
from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers, get_channel_layer
from django.conf import settings
from django.db import connection

from hub import supervision
from sessions.disk_space import free_megabytes, low_disk

# A Redis read must outlast the channel layer's blocking read by at least this much,
# or idle websockets fail (see hub.redis_options).
READ_MARGIN_SECONDS = 1.0


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


def check_channel_layer(timeout: float = 2.0) -> Check:
    """The layer that carries websocket events: its settings let an idle socket wait, and
    a message sent to a fresh channel comes back."""
    layer = get_channel_layer()
    blocking = getattr(layer, "brpop_timeout", None)
    for host in getattr(layer, "hosts", ()):
        read_timeout = host.get("socket_timeout", redis.asyncio.connection.DEFAULT_SOCKET_TIMEOUT) \
            if isinstance(host, dict) else redis.asyncio.connection.DEFAULT_SOCKET_TIMEOUT
        if blocking is not None and read_timeout is not None and read_timeout < blocking + READ_MARGIN_SECONDS:
            return Check(False, f"idle websockets would drop: Redis reads time out after {read_timeout:g} s, "
                                f"within the channel layer's blocking read of {blocking:g} s "
                                "(raise REDIS_SOCKET_TIMEOUT)")
    try:
        # A layer of its own: the process's layer receives for every open socket of this
        # process, one receive at a time, so an idle socket's blocking read held the
        # check up past its timeout (a false "degraded" whenever a page was open).
        async_to_sync(_round_trip)(channel_layers.make_backend(DEFAULT_CHANNEL_LAYER), timeout)
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    return Check(True, "round trip ok")


async def _round_trip(layer, timeout: float) -> None:
    try:
        channel = await layer.new_channel("healthz.")
        await layer.send(channel, {"type": "healthz.ping"})
        message = await asyncio.wait_for(layer.receive(channel), timeout)
    finally:
        with contextlib.suppress(Exception):
            await layer.close_pools()
    if message.get("type") != "healthz.ping":
        raise RuntimeError(f"unexpected message {message!r}")


def check_celery(timeout: float = 2.0) -> Check:
    from hub.celery import app

    queue, sweep = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_SWEEP_QUEUE
    try:
        # Done once every worker bound to the control exchange answered, not at the timeout.
        expected = _workers_listening(app.control.mailbox.namespace)
        replies = app.control.inspect(timeout=timeout, limit=expected or None).active_queues() or {}
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")

    def serving(name: str) -> list[str]:
        # Only workers serving our queues count (any other one bound to our namespace answers too).
        return [node for node, queues in replies.items() if any(q.get("name") == name for q in queues or ())]

    workers = serving(queue)
    if not workers:
        others = f" ({len(replies)} worker(s) of other queues did)" if replies else ""
        return Check(False, f"no worker answered for queue {queue!r}{others}")
    if not serving(sweep):
        return Check(False, f"no sweeper answered for queue {sweep!r}: timers, approval expiry and the "
                            "sessions of dead workers wait")
    return Check(True, f"{len(workers)} worker(s)")


def _workers_listening(namespace: str) -> int:
    """How many workers' control queues are bound on the broker (kombu's Redis transport
    keeps them in one set); 0 when unknown. A worker of this hub that died without
    unbinding keeps the wait at its timeout."""
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        return client.scard(f"_kombu.binding.{namespace}.pidbox")
    except Exception:
        return 0


def check_supervisor() -> Check | None:
    """The processes `manage.py start` runs and restarts; None when it runs none here."""
    report = supervision.read_report(settings.DATA_DIR)
    if report is None:
        return None
    return Check(report.ok, report.detail)


def check_disk() -> Check:
    free = free_megabytes()
    return Check(low_disk() is None, f"{free} MB free in the data folder (minimum {settings.ATRIUM_MIN_FREE_MB} MB)")


def run_checks() -> dict[str, Check]:
    checks = {"database": check_database(), "redis": check_redis(), "channel_layer": check_channel_layer(),
              "celery": check_celery(), "disk": check_disk()}
    if (supervisor := check_supervisor()) is not None:
        checks["supervisor"] = supervisor
    return checks
