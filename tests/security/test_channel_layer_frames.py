"""Issue 24: with Redis reachable, an attacker injected a frame into another room's
channel group, and the victim's open page rendered it (a stored XSS). The channel
layer's frames are now encrypted and authenticated with a key derived from SECRET_KEY:
Redis holds no readable event, and a frame written without the key is dropped: never
delivered, and never an error that closes the person's socket."""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels_redis.core import RedisChannelLayer
from django.conf import settings

MARKER = "<img src=x onerror=alert(document.cookie)>"


def channel_layer_from_settings() -> RedisChannelLayer:
    return channel_layers.make_backend("default")


def _forger() -> RedisChannelLayer:
    """A layer on the same Redis and prefix, as a process without SECRET_KEY makes one."""
    config = {key: value for key, value in settings.CHANNEL_LAYERS["default"]["CONFIG"].items()
              if key != "symmetric_encryption_keys"}
    return RedisChannelLayer(**config)


def test_redis_holds_no_readable_event_and_a_forged_frame_is_not_delivered():
    # A layer of its own, as the hub's settings make it: the process's shared one keeps
    # locks bound to the event loops of earlier tests.
    layer, forger = channel_layer_from_settings(), _forger()

    async def scenario() -> tuple[list[bytes], object]:
        channel = await layer.new_channel()
        await layer.group_add("room.victim", channel)
        try:
            await layer.group_send("room.victim", {"type": "message.new", "html": MARKER})
            key = layer.prefix + layer.non_local_name(channel)
            raw = await forger.connection(forger.consistent_hash(channel)).zrange(key, 0, -1)
            genuine = await layer.receive(channel)
            await forger.group_send("room.victim", {"type": "message.new", "html": MARKER})
            await layer.group_send("room.victim", {"type": "message.new", "html": "after"})
            # The forged frame is dropped, not raised into the consumer (which closed the
            # person's socket): the next genuine frame is what arrives.
            forged = await asyncio.wait_for(layer.receive(channel), timeout=10)
            return raw, (genuine, forged)
        finally:
            await layer.group_discard("room.victim", channel)
            await forger.close_pools()

    raw, (genuine, forged) = async_to_sync(scenario)()
    assert raw and all(MARKER.encode() not in frame for frame in raw)
    assert genuine["html"] == MARKER  # the hub's own frames arrive as sent
    assert forged == {"type": "message.new", "html": "after"}
