"""Recognising a conversation in a stream of stateless requests, and what each adds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from endpoint.conversation import (
    Answered,
    answer_digest,
    answer_digests,
    continuation,
    conversation_key,
    message_digests,
    placement,
    route,
)
from endpoint.formats import FORMATS
from endpoint.wire import WireError
from observations.gateway.messages import Message, ModelTurn, Params, Request, ToolCall, ToolSchema

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


ANSWER = Message("assistant", "", tool_calls=(ToolCall("c1", "read", {"path": "stats.py"}),))
OTHER_ANSWER = Message("assistant", "", tool_calls=(ToolCall("c9", "read", {"path": "tests.py"}),))


def test_the_gateways_answer_is_recognised_as_the_client_sends_it_back():
    turn = ModelTurn(text="", tool_calls=ANSWER.tool_calls)
    assert answer_digest(turn) == answer_digests([ANSWER])[0]
    # aider gives an answer back without its final newline.
    said = ModelTurn(text="calc.py\n```python\nx = 1\n```\n")
    assert answer_digests([ASK, Message("assistant", said.text.rstrip("\n"))]) == ["", answer_digest(said)]


@given(st.builds(Message, role=st.just("assistant"), text=st.sampled_from(["", "a", " a", "a\n", "\n"]) | st.text(max_size=6),
                 tool_calls=st.lists(st.builds(ToolCall, id=st.sampled_from(["c1", "c2"]), name=st.just("read"),
                                               arguments=st.just({"path": "a.py"})), max_size=2).map(tuple),
                 tool_call_id=st.none() | st.just("c1"), tool_name=st.none() | st.just("read")))
def test_an_assistant_message_matches_the_answer_it_says_whatever_its_spaces_and_ids(message):
    message_digests([message])  # the history's digests come first, as a request's do
    assert answer_digests([message]) == [answer_digest(ModelTurn(text=message.text, tool_calls=message.tool_calls))]


def test_a_history_goes_to_the_conversation_of_the_latest_answer_it_holds():
    history = (ASK, ANSWER, RESULT, OTHER_ANSWER)
    answers = answer_digests(history)
    first, latest = answers[1], answers[3]
    assert route(answers, [Answered(first, "s:a", True), Answered(latest, "s:b", False)]) == "s:b"
    # Two conversations gave the same answer: the one the history continues.
    assert route(answers, [Answered(latest, "s:x", False), Answered(latest, "s:y", True)]) == "s:y"
    assert route(answers, [Answered("0" * 32, "s:z", True)]) is None
    # A user message with an answer's text is not an answer.
    assert route(answer_digests([ASK]), [Answered(message_digests([ASK])[0], "s:u", True)]) is None


def test_a_diverged_history_is_a_new_segment_of_its_run_or_another_runs_conversation():
    held = message_digests((ASK, ANSWER, RESULT))
    last = answer_digests([OTHER_ANSWER])[0]

    def placed(history, *, client_named=False):
        return placement(held, last, message_digests(history), answer_digests(history), client_named=client_named)

    assert placed((ASK, ANSWER, RESULT, OTHER_ANSWER, RESULT)) == "continue"
    assert placed((ASK, ANSWER, RESULT)) == "continue"  # the same request again
    edited = (ASK, ANSWER, Message("tool", "[trimmed]", tool_call_id="c1"), OTHER_ANSWER)
    assert placed(edited) == "segment"  # holds the last answer: the same run
    twin = (ASK, Message("assistant", "I will read stats.py first."))
    assert placed(twin) == "fork"
    assert placed((ASK,)) == "fork"  # a run starting again
    assert placed(twin, client_named=True) == "segment"  # the client says it is the same run


@pytest.mark.parametrize(("user_id", "expected"), [
    ('{"device_id":"d","account_uuid":"","session_id":"54c1eb09-bc4c"}', "54c1eb09-bc4c"),
    ("user_abc_account__session_57a121ec-f78c", "57a121ec-f78c"),
    ("user_abc", None),  # an end user's id names no conversation
    ('{"device_id":"d"}', None),
    ("[1, 2]", None),
])
def test_claude_codes_session_is_read_from_its_user_id(user_id, expected):
    assert FORMATS["anthropic"].conversation_id({"metadata": {"user_id": user_id}}, {}) == expected
    assert FORMATS["anthropic"].conversation_id({}, {"X-Claude-Code-Session-Id": "s-1"}) == "s-1"


def test_an_end_users_id_tells_two_runs_apart_and_never_joins_them():
    alice = request(ASK)
    bob = Request(model="m", system="Be brief.", tools=TOOLS, messages=(ASK,), max_tokens=0,
                  params=Params(user="bob"))
    assert conversation_key(1, alice) != conversation_key(1, bob)
