"""Broadcasts from sync code share one loop per process and its Redis connection,
instead of a new loop and connection per send; they still arrive, in the order they
were queued, and the caller never waits for them."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from asgiref.sync import async_to_sync
from celery.signals import worker_process_shutdown
from channels.layers import channel_layers, get_channel_layer

from rooms import broadcast


def test_sends_from_plain_threads_share_one_loop_and_one_connection():
    layer = get_channel_layer()  # the process's, which broadcast sends through
    # The receiving end a layer of its own: the process's keeps per-channel locks bound
    # to the event loops of earlier tests in this process.
    receiver = channel_layers.make_backend("default")
    channel = async_to_sync(receiver.new_channel)()
    async_to_sync(receiver.group_add)("broadcast-test", channel)
    try:
        def send(n: int) -> None:
            for i in range(10):
                broadcast.group_send("broadcast-test", {"type": "test.event", "n": n * 10 + i})

        threads = [threading.Thread(target=send, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert broadcast.flush(timeout=30)  # the sends were queued: the pool is there once they left
        loop = broadcast._shared_loop()
        pool = layer._layers[loop]._connections[0].connection_pool
        opened = len(pool._available_connections) + len(pool._in_use_connections)
        # About one per sender sending at once (a loaded machine may see a replaced one or
        # two more), never one per send (30).
        assert 1 <= opened <= 6
        # One loop for all 30: the layer removes a received message from its backup queue
        # in a task of the receiving loop, which a loop per receive ends first (the same
        # message again, on Python 3.11).
        async def receive_all() -> list[int]:
            try:
                return [(await receiver.receive(channel))["n"] for _ in range(30)]
            finally:
                await receiver.close_pools()

        assert sorted(async_to_sync(receive_all)()) == list(range(30))
    finally:
        async_to_sync(receiver.group_discard)("broadcast-test", channel)


def test_a_send_is_queued_in_order_and_never_waited_for_and_a_failed_one_is_logged(monkeypatch, caplog):
    layer = get_channel_layer()
    real, arrived = layer.group_send, []

    async def group_send(group: str, event: dict) -> None:
        if event["n"] == 0:
            await asyncio.sleep(2)  # Redis slow to answer the first
        if event["n"] == 1:
            raise ConnectionError("Redis went away")
        if event["n"] == 2:
            raise asyncio.CancelledError  # as a layer's own cancelled read surfaces
        arrived.append(event["n"])
        await real(group, event)

    monkeypatch.setattr(layer, "group_send", group_send)
    started = time.monotonic()
    for n in range(5):
        broadcast.group_send("broadcast-order", {"type": "test.event", "n": n})
    assert time.monotonic() - started < 1  # the caller went on while the first send waited
    assert arrived == []
    assert broadcast.flush(timeout=30)
    assert arrived == [0, 3, 4]  # in order, and the ones that failed did not stop the rest
    assert "broadcast to broadcast-order failed" in caplog.text and "Redis went away" in caplog.text


def _redis_slow(monkeypatch, seconds: float) -> list[int]:
    """Each send takes ``seconds``; the ``n`` of those that arrived, in order."""
    arrived: list[int] = []

    async def group_send(group: str, event: dict) -> None:
        await asyncio.sleep(seconds)
        arrived.append(event["n"])

    monkeypatch.setattr(get_channel_layer(), "group_send", group_send)
    return arrived


def test_sends_past_the_queues_bound_are_dropped_and_logged_while_redis_is_slow(monkeypatch, caplog):
    arrived = _redis_slow(monkeypatch, 0.5)
    monkeypatch.setattr(broadcast, "QUEUED_MAX", 3)
    for n in range(5):
        broadcast.group_send("broadcast-bound", {"type": "test.event", "n": n})
    assert broadcast.flush(timeout=30)
    assert arrived == [0, 1, 2]
    assert caplog.text.count("broadcast queue full") == 1  # once while it stays full, not per event
    broadcast.group_send("broadcast-bound", {"type": "test.event", "n": 5})
    assert "2 events were dropped" in caplog.text
    assert broadcast.flush(timeout=30) and arrived == [0, 1, 2, 5]


def test_a_celery_pool_process_that_ends_sends_what_it_queued_first(monkeypatch):
    arrived = _redis_slow(monkeypatch, 1)
    broadcast.group_send("broadcast-exit", {"type": "test.event", "n": 1})
    # What billiard's pool process sends before its os._exit, which skips atexit.
    worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=0)
    assert arrived == [1]
