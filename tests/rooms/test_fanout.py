"""A process's sockets of one group share one channel-layer membership (rooms.fanout):
every socket still gets every event, a slow socket loses only its own, and a failed
read does not end the membership. Through the real Redis channel layer."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from rooms import events, fanout, streams
from tests.rooms.factories import make_room, make_user
from tests.rooms.test_consumers import Socket, cookie_for, post
from tests.rooms.test_stream_lifecycle import members

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sockets_of_one_process_share_one_membership_and_all_get_every_message():
    owner = make_user()
    room = make_room(owner)
    group, cookie = events.room_group(room.pk), cookie_for(owner)

    async def scenario():
        sockets = [Socket(room.slug, cookie) for _ in range(3)]
        for socket in sockets:
            assert await socket.open()
            await socket.hello()
        assert len(await database_sync_to_async(members)(group)) == 1
        seq = (await post(room, owner, "to all three")).seq
        for socket in sockets:
            assert (await socket.receive())["seq"] == seq

        for socket in sockets[:2]:
            await socket.close()
        assert len(await database_sync_to_async(members)(group)) == 1  # the third still watches
        seq = (await post(room, owner, "to the last one")).seq
        assert (await sockets[2].receive())["seq"] == seq

        await sockets[2].close()
        assert await database_sync_to_async(members)(group) == []

    async_to_sync(scenario)()


def test_a_socket_that_does_not_read_is_told_it_fell_behind_and_the_others_get_everything(monkeypatch):
    monkeypatch.setattr(fanout, "INBOX_CAPACITY", 3)
    layer = get_channel_layer()

    async def scenario():
        group = "fanout-slow-reader"
        hub = fanout.fanout_for(layer)
        reading, stuck = fanout.new_inbox(), fanout.new_inbox()
        await hub.join(group, reading)
        await hub.join(group, stuck)
        got = []
        for n in range(6):
            await layer.group_send(group, {"type": "test.event", "n": n})
            got.append((await asyncio.wait_for(reading.get(), 3))["n"])
        assert got == list(range(6))
        # Full at the fourth event: emptied and told, then the fifth and sixth.
        assert [stuck.get_nowait() for _ in range(stuck.qsize())] == [
            fanout.BEHIND, {"type": "test.event", "n": 4}, {"type": "test.event", "n": 5}]
        await hub.leave(group, reading)
        await hub.leave(group, stuck)
        assert hub.members(group) == 0

    async_to_sync(scenario)()


def test_a_socket_told_it_fell_behind_closes_and_its_reconnect_replays_what_it_missed(monkeypatch):
    owner = make_user()
    room = make_room(owner)
    cookie = cookie_for(owner)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.hello()
        [consumer_inbox] = fanout.fanout_for(get_channel_layer())._inboxes[events.room_group(room.pk)]
        seen = (await socket.receive())["seq"] if await post(room, owner, "seen") else None
        # The fan-out emptied this socket's inbox (the next post was in it) and told it.
        missed = (await post(room, owner, "missed while behind")).seq
        while not consumer_inbox.empty():
            consumer_inbox.get_nowait()
        consumer_inbox.put_nowait(fanout.BEHIND)
        # The socket may have forwarded the post before the inbox was emptied: it closes after it.
        while (output := await socket.communicator.receive_output(3))["type"] == "websocket.send":
            assert json.loads(output["text"])["seq"] == missed
        assert output == {"type": "websocket.close", "code": streams.CLOSE_BEHIND}
        again = Socket(room.slug, cookie)  # as the page does: from the last seq it showed
        assert await again.open()
        assert [f["seq"] for f in await again.hello(last_seq=seen)] == [missed]
        await again.close()

    async_to_sync(scenario)()


def test_joins_and_leaves_of_one_group_share_one_membership_through_any_interleaving():
    layer = get_channel_layer()

    async def scenario():
        group = "fanout-interleaved"
        hub = fanout.fanout_for(layer)
        inboxes = [fanout.new_inbox() for _ in range(20)]
        await asyncio.gather(*(hub.join(group, inbox) for inbox in inboxes))
        assert hub.members(group) == 20
        assert len(await database_sync_to_async(members)(group)) == 1
        # Half leave while the other half join again (a page reloading).
        await asyncio.gather(*(hub.leave(group, inbox) for inbox in inboxes[:10]),
                             *(hub.join(group, inbox) for inbox in inboxes[10:]))
        await layer.group_send(group, {"type": "test.event"})
        for inbox in inboxes[10:]:
            assert (await asyncio.wait_for(inbox.get(), 3))["type"] == "test.event"
        assert all(inbox.empty() for inbox in inboxes[:10])
        await asyncio.gather(*(hub.leave(group, inbox) for inbox in inboxes[10:]))
        assert await database_sync_to_async(members)(group) == [] and not hub._locks

    async_to_sync(scenario)()


class FailsOnce:
    """The real layer, whose first read fails as when Redis goes away for a moment."""

    def __init__(self, layer) -> None:
        self.layer, self.failed = layer, False

    def __getattr__(self, name):
        return getattr(self.layer, name)

    async def receive(self, channel):
        if not self.failed:
            self.failed = True
            raise ConnectionError("Redis went away")
        return await self.layer.receive(channel)


def test_a_failed_read_is_retried_and_the_membership_stays(monkeypatch, caplog):
    monkeypatch.setattr(fanout, "RETRY_SECONDS", 0.05)
    layer = FailsOnce(get_channel_layer())

    async def scenario():
        group = "fanout-read-fails"
        hub = fanout.GroupFanout(layer)
        inbox = fanout.new_inbox()
        await hub.join(group, inbox)
        await layer.group_send(group, {"type": "test.event", "n": 1})
        assert (await asyncio.wait_for(inbox.get(), 3))["n"] == 1
        await hub.leave(group, inbox)

    async_to_sync(scenario)()
    assert layer.failed and "retrying" in caplog.text


class CancelBecomesError(FailsOnce):
    """The real layer, answering a read's cancellation with an error of its own, as a
    connection torn down mid-read does."""

    async def receive(self, channel):
        try:
            return await self.layer.receive(channel)
        except asyncio.CancelledError:
            raise ConnectionError("connection closed while reading") from None


@pytest.mark.timeout(30)
def test_a_reader_cancelled_while_the_layer_reads_ends_whatever_the_layer_raises(monkeypatch):
    """Else it retried and read on: an event loop closing with it never closed (a test's
    socket, seen hanging in CI until its timeout)."""
    monkeypatch.setattr(fanout, "RETRY_SECONDS", 0.05)
    layer = CancelBecomesError(get_channel_layer())

    async def scenario():
        group = "fanout-cancelled-read"
        hub = fanout.GroupFanout(layer)
        inbox = fanout.new_inbox()
        await hub.join(group, inbox)
        _channel, reader = hub._readers[group]
        await asyncio.sleep(0.1)  # the reader is inside the layer's read
        await hub.leave(group, inbox)
        await asyncio.wait([reader], timeout=2)
        assert reader.cancelled()

    async_to_sync(scenario)()


def test_a_frame_is_encoded_once_for_all_the_sockets_that_send_it():
    frame = {"type": "message", "seq": 1, "html": "<p>hi</p>"}
    assert streams.encoded(frame) is streams.encoded(frame) == '{"type": "message", "seq": 1, "html": "<p>hi</p>"}'
    other = dict(frame)
    assert streams.encoded(other) == streams.encoded(frame) and streams.encoded(other) is not streams.encoded(frame)
