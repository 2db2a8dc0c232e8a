"""Recognising a conversation in a stream of stateless requests, and what each adds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.endpoint.conversation import continuation, conversation_key, message_digests
from agents.endpoint.wire import WireError
from observations.gateway.messages import Message, Request, ToolCall, ToolSchema

TOOLS = (ToolSchema("read", "Read a file.", {"type": "object"}),)


def request(*messages: Message, system: str = "Be brief.", tools=TOOLS) -> Request:
    return Request(model="m", system=system, tools=tools, messages=messages, max_tokens=0)


ASK = Message("user", "fix the median")
CALL = Message("assistant", "", tool_calls=(ToolCall("c1", "read", {"path": "stats.py"}),))
RESULT = Message("tool", "def median(xs): ...", tool_call_id="c1", tool_name="read")


def test_a_growing_history_is_one_conversation_by_its_stable_start():
    first = conversation_key(1, request(ASK))
    assert conversation_key(1, request(ASK, CALL, RESULT)) == first
    assert conversation_key(2, request(ASK)) != first  # another key, another conversation
    assert conversation_key(1, request(Message("user", "another task"))) != first
    assert conversation_key(1, request(ASK, system="Other rules.")) != first
    assert conversation_key(1, request(ASK, tools=())) != first


def test_a_client_may_name_its_conversation():
    assert conversation_key(1, request(ASK), "run-42") == "h:1:run-42"
    assert conversation_key(1, request(Message("user", "other")), "run-42") == "h:1:run-42"
    for bad in ("", "x" * 129, "a b", "é", "../x"):
        with pytest.raises(WireError, match="X-Atrium-Session"):
            conversation_key(1, request(ASK), bad)


def test_what_is_new_is_what_follows_the_held_messages():
    known = message_digests([ASK, CALL])
    step = continuation(known, request(ASK, CALL, RESULT))
    assert (step.kept, step.new, step.diverged) == (2, (RESULT,), False)
    edited = continuation(known, request(ASK, Message("assistant", "I'll just guess.")))
    assert (edited.kept, edited.diverged_at) == (1, 1)
    compacted = continuation(known, request(Message("user", "Summary: fix the median")))
    assert compacted.diverged_at == 0 and len(compacted.new) == 1
    assert continuation(known, request(ASK)).diverged_at == 1  # a shorter history


messages = st.lists(st.builds(Message, role=st.sampled_from(["user", "assistant"]), text=st.text(max_size=20)),
                    max_size=8)


@given(held=messages, added=messages)
def test_appending_never_diverges_and_returns_exactly_what_was_appended(held, added):
    step = continuation(message_digests(held), request(*held, *added))
    assert not step.diverged and step.kept == len(held) and step.new == tuple(added)


@given(held=messages.filter(bool), index=st.integers(min_value=0), text=st.text(max_size=20))
def test_a_changed_message_diverges_where_it_changed(held, index, text):
    index %= len(held)
    changed = list(held)
    changed[index] = Message(held[index].role, held[index].text + "!" + text)
    step = continuation(message_digests(held), request(*changed))
    assert step.diverged_at == index == step.kept
    assert step.new == tuple(changed[step.kept:])
