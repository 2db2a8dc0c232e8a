"""A turn answered in the client's format, streamed as the upstream streams it.

The upstream call runs in a worker thread (a session's unit, or a translated call);
the pieces of the turn (``TurnDelta``) cross to the event loop as they arrive and leave
at once as the client's stream events (``endpoint.formats.events``). The response
starts with the first piece: a failure before it is an ordinary error response with
its status; one after it is the format's error event. A client that leaves the stream
makes the thread's next piece raise ``StreamAbandoned``, which closes the upstream
stream; the unit then saves what it did, the call recorded as failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

from agents.providers import StreamAbandoned
from endpoint.formats import FORMATS
from endpoint.formats.events import TurnEvents
from endpoint.upstream import Relay, TurnCall, replayed
from endpoint.wire import Format, WireError
from observations.gateway.messages import ModelTurn, TurnDelta

log = logging.getLogger(__name__)

EVENT_STREAM = {"Content-Type": "text/event-stream; charset=utf-8"}


async def turn_answer(fmt: Format, model: str, body: Mapping[str, Any], call: TurnCall) -> Relay:
    """The answer to ``body``: the turn whole, or streamed as it comes when the
    client asked for a stream. ``call`` raises WireError for what the client must hear."""
    wire_format = FORMATS[fmt]
    if body.get("stream") is not True:
        turn = await call(None)
        return Relay(200, {"Content-Type": "application/json"},
                     content=json.dumps(wire_format.response(turn, model, body)).encode())
    pieces = Pieces()
    running = asyncio.ensure_future(call(pieces.deliver))
    # Read even when nobody waits for it any more (a client that left): no "never retrieved" warning.
    running.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        first = await pieces.next(running)
    except BaseException:
        pieces.leave()
        raise
    if first is None:  # the turn came whole (or failed): no piece of it has gone out
        return Relay(200, dict(EVENT_STREAM), stream=replayed(wire_format.stream(running.result(), model, body)))
    return Relay(200, dict(EVENT_STREAM), stream=_streamed(fmt, wire_format.events(model, body), pieces, first,
                                                           running), on_close=pieces.leave)


class Pieces:
    """The pieces of a turn, from the thread that calls the upstream to the event loop."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[TurnDelta] = asyncio.Queue()
        self._left = threading.Event()

    def deliver(self, delta: TurnDelta) -> None:
        """Called in the upstream call's thread, for each piece as it arrives."""
        if self._left.is_set():
            raise StreamAbandoned("the client left the stream before the turn ended")
        self._loop.call_soon_threadsafe(self._queue.put_nowait, delta)

    async def next(self, running: asyncio.Future[ModelTurn]) -> TurnDelta | None:
        """The next piece; None once the call is done and every piece was taken (the
        thread's pieces are queued before its end is: both go through the loop in order)."""
        if not self._queue.empty():
            return self._queue.get_nowait()
        if running.done():
            return None
        getter = asyncio.ensure_future(self._queue.get())
        try:
            await asyncio.wait((getter, running), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()  # a piece it would have taken stays in the queue
        if getter.done():
            return getter.result()
        return self._queue.get_nowait() if not self._queue.empty() else None

    def leave(self) -> None:
        self._left.set()


async def _streamed(fmt: Format, events: TurnEvents, pieces: Pieces, first: TurnDelta,
                    running: asyncio.Future[ModelTurn]) -> AsyncIterator[bytes]:
    try:
        for chunk in events.opening():
            yield chunk
        piece: TurnDelta | None = first
        while piece is not None:
            for chunk in events.piece(piece):
                yield chunk
            piece = await pieces.next(running)
        try:
            turn = running.result()
        except WireError as exc:
            yield FORMATS[fmt].sse_error(exc)
            return
        except Exception:
            log.exception("gateway endpoint: a streamed turn failed")
            yield FORMATS[fmt].sse_error(WireError("The gateway failed to handle this request.", status=500,
                                                   kind="api_error"))
            return
        for chunk in events.closing(turn):
            yield chunk
    finally:
        pieces.leave()  # the client left (or the stream ended): the upstream's next piece stops it
