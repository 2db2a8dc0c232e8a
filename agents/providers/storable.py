"""A model's answer made storable, before anyone sees it: PostgreSQL's text and jsonb
refuse NUL, and UTF-8 (every database, file and socket) cannot encode a lone surrogate,
which an upstream's JSON can escape (``"\\ud83d"`` alone). What is stored and what a
gateway client is given must be the same text: the client sends it back in its next
history, and a lone half there is refused (``endpoint.wire.parse_body``)."""

from __future__ import annotations

import dataclasses

from agents.tools.text import clean_data, clean_text
from observations.gateway.messages import ModelTurn, ToolCall, TurnDelta


def storable_turn(turn: ModelTurn) -> ModelTurn:
    """``turn`` with NUL and lone surrogates in its text and calls replaced
    (``clean_text``); itself when it holds none. Thinking blocks are left as they came,
    for their signatures: a NUL in one is stored as JSON's escape, a lone half is not."""
    calls = tuple(ToolCall(clean_text(c.id), clean_text(c.name), clean_data(c.arguments)) for c in turn.tool_calls)
    text = clean_text(turn.text)
    if text == turn.text and calls == turn.tool_calls:
        return turn
    return dataclasses.replace(turn, text=text, tool_calls=calls)


def storable_delta(delta: TurnDelta) -> TurnDelta:
    """A streamed piece cleaned as ``storable_turn`` cleans the turn it makes up."""
    text, call_id, name = clean_text(delta.text), clean_text(delta.call_id), clean_text(delta.name)
    if (text, call_id, name) == (delta.text, delta.call_id, delta.name):
        return delta
    return dataclasses.replace(delta, text=text, call_id=call_id, name=name)
