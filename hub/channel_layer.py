"""The channel layer: channels-redis, whose frames are encrypted and authenticated with
a key derived from SECRET_KEY (settings), and which skips a frame that does not decrypt.

Such a frame was written by someone without the key (whoever reached Redis) or damaged;
channels-redis raised it into the receiving consumer, which closed the person's socket.
It is dropped (and logged) instead, and the consumer waits for the next frame: a
forger can neither show a page anything nor close it.
"""

from __future__ import annotations

import logging

from channels_redis.core import RedisChannelLayer
from cryptography.fernet import InvalidToken

log = logging.getLogger(__name__)


class AuthenticatedChannelLayer(RedisChannelLayer):
    async def receive(self, channel: str) -> dict:
        while True:
            try:
                return await super().receive(channel)
            except InvalidToken:  # already taken off the channel's queue: dropped
                log.warning("a channel-layer frame for %s did not decrypt (not written with this hub's "
                            "SECRET_KEY): dropped", channel)
