"""Message digests, prefix hashes and call records."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from agents.providers import CallRecord, prefix_hash
from observations.gateway.messages import (
    Message,
    ToolCall,
    digest_head,
    digests_carried,
    message_digest,
    serialize_message,
)
from tests.agents.providers.requests import session_request

TEXTS = st.sampled_from(["", "a", "ab", "\n", '"', "[1]", ',"x"]', "é", "\ud800"]) | st.text(max_size=12)
IDS = st.none() | st.sampled_from(["", "c", "c1", ',"c"'])
CALLS = st.lists(st.builds(ToolCall, id=st.sampled_from(["c", "c1"]), name=st.sampled_from(["read", "read_file"]),
                           arguments=st.dictionaries(st.sampled_from(["path", "p"]), TEXTS | st.integers(), max_size=2)),
                 max_size=2).map(tuple)
FIELDS = {"role": st.sampled_from(["user", "assistant", "tool"]), "text": TEXTS, "tool_calls": CALLS,
          "tool_call_id": IDS, "tool_name": IDS, "thinking": st.lists(TEXTS, max_size=1).map(tuple)}
MESSAGES = st.builds(Message, **FIELDS)


@given(MESSAGES, st.data())
def test_two_messages_have_one_digest_when_their_canonical_forms_are_equal(one, data):
    message_digest(one)  # kept by the message: a copy with a field changed has its own
    field = data.draw(st.sampled_from(sorted(FIELDS)))
    other = replace(one, **{field: data.draw(FIELDS[field])})  # one field changed, or not
    same = serialize_message(one) == serialize_message(other)
    if one.tool_call_id is None and other.tool_call_id is None:
        same = same and one.tool_name == other.tool_name  # the digest holds the name; never set without an id
    assert (message_digest(one) == message_digest(other)) == same


@given(*[st.lists(st.builds(ToolCall, id=st.sampled_from(["c", "d"]), name=st.sampled_from(["read", "r"]),
                            arguments=st.dictionaries(st.sampled_from(["p", "q"]), st.sampled_from(["", "a", 1]),
                                                      max_size=2)), max_size=2).map(tuple)] * 2)
def test_two_turns_have_one_digest_when_their_calls_are_equal(calls, others):
    # Few ids, names and arguments: turns that differ in one of them come often.
    one, other = Message("assistant", "x", tool_calls=calls), Message("assistant", "x", tool_calls=others)
    assert (message_digest(one) == message_digest(other)) == (
        serialize_message(one) == serialize_message(other))


# Any JSON a model can write as a call's arguments: nested, with floats, nulls and escapes.
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | TEXTS,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
                           max_leaves=8)
ANY_CALLS = st.lists(st.builds(ToolCall, id=TEXTS, name=TEXTS, arguments=st.dictionaries(TEXTS, JSON_VALUES, max_size=3)),
                     max_size=2).map(tuple)


@given(st.builds(Message, role=st.sampled_from(["user", "tool"]) | st.text(max_size=4), text=TEXTS,
                 tool_calls=CALLS | ANY_CALLS, tool_call_id=st.none() | TEXTS, tool_name=st.none() | TEXTS))
def test_a_digests_head_is_the_json_of_its_fields(message):
    assert digest_head(message) == json.dumps(
        [message.role, len(message.text), [[c.id, c.name, c.arguments] for c in message.tool_calls],
         message.tool_call_id, message.tool_name], sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# Values Python takes for equal and JSON writes apart (1, 1.0, True; 0.0, -0.0), nested too.
ALIKE_VALUES = [0, 0.0, -0.0, False, 1, 1.0, True, "1"]
ALIKE = st.sampled_from(ALIKE_VALUES)
ALIKE_CALLS = st.lists(st.builds(ToolCall, id=st.just("c"), name=st.just("read"), arguments=st.dictionaries(
    st.just("p"), ALIKE | st.lists(ALIKE, max_size=2) | st.dictionaries(st.just("q"), ALIKE, max_size=1),
    max_size=1)), max_size=1).map(tuple)
HISTORY_MESSAGES = st.builds(Message, role=st.sampled_from(["user", "assistant"]), text=st.sampled_from(["", "a"]),
                             tool_calls=ALIKE_CALLS)


def _twin(value, data):
    """``value`` with each of its scalars replaced by one Python takes for equal."""
    if isinstance(value, dict):
        return {name: _twin(v, data) for name, v in value.items()}
    if isinstance(value, list):
        return [_twin(v, data) for v in value]
    return data.draw(st.sampled_from([v for v in ALIKE_VALUES if v == value and type(v) is type(value)] +
                                     [v for v in ALIKE_VALUES if v == value]))


@given(st.lists(HISTORY_MESSAGES, max_size=6), st.lists(HISTORY_MESSAGES, max_size=2), st.data())
def test_a_digest_carried_from_the_last_history_is_the_messages_own(held, drawn, data):
    """The next request's messages take the digests of the last history's equal ones
    (endpoint/hot.py): never one its own content would not make."""
    for message in held:
        message_digest(message)
    # The history resent, some of its calls' arguments written apart, then new messages.
    messages = [Message(m.role, m.text, tool_calls=tuple(ToolCall(c.id, c.name, _twin(c.arguments, data))
                                                         for c in m.tool_calls)) for m in held] + drawn
    digests_carried(held, messages)
    assert [message_digest(m) for m in messages] == [message_digest(replace(m)) for m in messages]


def test_digests_are_carried_while_the_histories_are_alike():
    held = [Message("user", "fix it"), Message("assistant", "", tool_calls=(ToolCall("c", "read", {"p": 1}),)),
            Message("tool", "x = 1", tool_call_id="c"), Message("user", "more")]
    for message in held:
        message_digest(message)
    resent = [replace(m) for m in held[:3]] + [Message("user", "other"), replace(held[3])]
    digests_carried(held, resent)
    assert [m._digest for m in resent] == [m._digest for m in held[:3]] + [None, None]
    for apart in ({"p": 1.0}, {"p": True}):
        written_apart = [replace(held[0]), replace(held[1], tool_calls=(ToolCall("c", "read", apart),))]
        digests_carried(held, written_apart)
        assert written_apart[1]._digest is None and written_apart[1] == held[1]
    zero = [Message("assistant", "", tool_calls=(ToolCall("c", "read", {"p": 0.0}),))]
    message_digest(zero[0])
    negative = [Message("assistant", "", tool_calls=(ToolCall("c", "read", {"p": -0.0}),))]
    digests_carried(zero, negative)
    assert negative[0]._digest is None


def test_the_text_is_hashed_apart_from_the_fields_before_it():
    assert message_digest(Message("tool", "c", tool_call_id="i", tool_name="ab")) != message_digest(
        Message("tool", "bc", tool_call_id="i", tool_name="a"))
    assert message_digest(Message("user", "")) != message_digest(Message("assistant", ""))


def test_appending_messages_within_an_epoch_keeps_the_prefix_hash():
    request = session_request(stable_prefix_end=2)
    longer = replace(request, messages=request.messages + (Message("assistant", "more"),))

    assert prefix_hash(longer) == prefix_hash(request)


def test_a_change_inside_the_prefix_changes_the_hash():
    request = session_request(stable_prefix_end=2)
    folded = replace(
        request,
        messages=(
            *request.messages[:2],
            replace(request.messages[2], text="[receipt]"),
            *request.messages[3:],
        ),
    )

    assert prefix_hash(folded) != prefix_hash(request)


def test_without_a_prefix_end_only_system_and_tools_are_hashed():
    request = session_request(stable_prefix_end=-1)
    other_messages = replace(request, messages=(Message("user", "something else"),))

    assert prefix_hash(request) == prefix_hash(other_messages)
    assert prefix_hash(request) != prefix_hash(replace(request, system="another system prompt"))


def test_a_record_serializes_to_plain_data():
    record = CallRecord(
        model="openai:a", requested_model="openai:a", prefix_hash="0" * 64, input_tokens=5
    )

    data = record.to_dict()

    assert data["input_tokens"] == 5 and data["error"] is None
    assert set(data) >= {
        "model",
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "latency_ms",
        "prefix_hash",
        "error",
    }
