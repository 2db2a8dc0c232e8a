"""People's messages for a running session are signalled, not polled.

A running ``shell`` or ``await`` returns early when a person wrote to the session. It
used to ask the database (two queries) every 0.1 s; now a post that reaches a session
rings its doorbell, a Redis pub/sub message sent after the post commits, and the
worker asks the database only when the bell rang, and every INPUT_RECHECK_SECONDS in
case a ring was lost (Redis restarted, the post came before the worker listened). The
ring also ends the tool's pause between two looks, so it looks at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

import redis
from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

INPUT_RECHECK_SECONDS = 5.0

_clients: dict[int, redis.Redis] = {}


def _client() -> redis.Redis:
    """This process's Redis client for doorbells (one per process: not shared over a fork)."""
    client = _clients.get(os.getpid())
    if client is None:
        client = _clients[os.getpid()] = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=5, socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
            health_check_interval=30)
    return client


def channel(session_id: int) -> str:
    return f"{settings.CHANNEL_LAYERS['default']['CONFIG'].get('prefix', 'atrium')}:session-input:{session_id}"


def ring_on_commit(session_ids: Iterable[int]) -> None:
    """Ring the sessions' doorbells once the current transaction commits."""
    ids = list(session_ids)

    def ring() -> None:
        try:
            client = _client()
            for session_id in ids:
                client.publish(channel(session_id), "input")
        except redis.RedisError:  # the worker's periodic check finds the post anyway
            log.warning("could not ring the doorbells of sessions %s", ids, exc_info=True)

    transaction.on_commit(ring, robust=True)


class Doorbell:
    """Listens to one session's doorbell while a worker runs it."""

    def __init__(self, session_id: int) -> None:
        self.rung = threading.Event()
        self._halt = threading.Event()
        self._channel = channel(session_id)
        self._thread = threading.Thread(target=self._listen, daemon=True, name=f"doorbell-{session_id}")
        self._thread.start()

    def _listen(self) -> None:
        while not self._halt.is_set():
            pubsub = _client().pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self._channel)
                while not self._halt.is_set():
                    if pubsub.get_message(timeout=1.0) is not None:
                        self.rung.set()
            except redis.RedisError:
                log.warning("doorbell %s lost its connection; listening again", self._channel, exc_info=True)
                self.rung.set()  # a ring may have been missed: look once
                self._halt.wait(1.0)
            finally:
                pubsub.close()

    def close(self) -> None:
        self._halt.set()


class InputWatch:
    """``interrupted()`` for the tools: True when the database says input is waiting,
    asked only when the doorbell rang or INPUT_RECHECK_SECONDS passed (the first call
    always asks: a post may have come before the bell was listened to)."""

    def __init__(self, bell: Doorbell, pending: Callable[[], bool]) -> None:
        self.bell, self.pending = bell, pending
        self._next_check = 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if not self.bell.rung.is_set() and now < self._next_check:
            return False
        self.bell.rung.clear()
        self._next_check = now + INPUT_RECHECK_SECONDS
        return self.pending()
