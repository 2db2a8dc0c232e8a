"""Broadcasts from sync code with no event loop (a Celery worker) share one loop and its
Redis connection, instead of a new loop and connection per send; they still arrive."""

from __future__ import annotations

import threading

from asgiref.sync import async_to_sync
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
