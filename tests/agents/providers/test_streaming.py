"""Streamed calls (``complete(request, on_delta)``) against the local wire-protocol
server: the pieces join to the turn the call returns, a stream cut off in mid-answer
is a failure, and a piece already given is never given twice by a retry."""

from __future__ import annotations

import json
import time

import pytest

from agents.providers import StreamAbandoned, Transient
from observations.gateway.messages import TurnDelta
from tests.agents.providers.requests import session_request
from tests.agents.providers.test_anthropic_provider import anthropic_for
from tests.agents.providers.test_openai_provider import CHAT, openai_for
from tests.endpoint.conftest import anthropic_tool_use_stream, sse

HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1760000000, "model": "gpt-4.1"}


def chunks(*deltas: dict, finish: str | None = "tool_calls") -> list[tuple[float, str]]:
    events = [(None, {**HEAD, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
    if finish is not None:
        events += [(None, {**HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
                   (None, {**HEAD, "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 6,
                                                            "total_tokens": 46}}), (None, "[DONE]")]
    return [(0.0, sse([event])) for event in events]


def joined(pieces: list[TurnDelta]) -> tuple[str, list[tuple[str, str, dict]]]:
    text = "".join(p.text for p in pieces if p.call is None)
    calls: dict[int, list] = {}
    for piece in (p for p in pieces if p.call is not None):
        held = calls.setdefault(piece.call, [piece.call_id, piece.name, ""])
        held[2] += piece.text
    return text, [(i, n, json.loads(a or "{}")) for i, n, a in calls.values()]


def test_an_openai_stream_gives_pieces_that_join_to_the_turn_a_call_without_an_id_minted_at_once(wire, sleep):
    wire.stream(CHAT, chunks({"role": "assistant", "content": "Reading "}, {"content": "both."},
                             {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                              "function": {"name": "read_file", "arguments": "{\"path\":"}}]},
                             {"tool_calls": [{"index": 0, "function": {"arguments": " \"a.py\"}"}}]},
                             {"tool_calls": [{"index": 1, "type": "function",
                                              "function": {"name": "list_files", "arguments": "{}"}}]}))
    pieces: list[TurnDelta] = []
    completion = openai_for(wire, sleep).call(session_request(), on_delta=pieces.append)
    turn = completion.turn
    text, calls = joined(pieces)
    assert text == turn.text == "Reading both."
    assert calls == [(c.id, c.name, c.arguments) for c in turn.tool_calls]
    assert turn.tool_calls[0].id == "call_a" and turn.tool_calls[1].id.startswith("call_")
    assert (turn.stop_reason, turn.usage.input_tokens, completion.record.output_tokens) == ("tool_use", 40, 6)
    sent = wire.requests_to(CHAT)[0].json
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_an_anthropic_stream_joins_its_text_blocks_as_the_whole_message_does(wire, sleep):
    wire.stream("/v1/messages", [(0.0, anthropic_tool_use_stream())])
    pieces: list[TurnDelta] = []
    turn = anthropic_for(wire, sleep).call(session_request(), on_delta=pieces.append).turn
    text, calls = joined(pieces)
    assert text == turn.text == "Running the tests."
    assert calls == [("toolu_1", "shell", {"command": "pytest -q"})] == \
        [(c.id, c.name, c.arguments) for c in turn.tool_calls]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (12, 20)


def test_a_server_that_answers_a_stream_whole_gives_the_turn_and_no_pieces(wire, sleep):
    wire.reply(CHAT, json_body={"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "All of it."}, "finish_reason": "stop"}]})
    pieces: list[TurnDelta] = []
    assert openai_for(wire, sleep).call(session_request(), on_delta=pieces.append).turn.text == "All of it."
    assert pieces == []


def test_a_stream_cut_off_after_a_piece_fails_at_once_one_cut_off_before_any_is_retried(wire, sleep):
    wire.stream(CHAT, chunks({"role": "assistant", "content": "Half"}, finish=None))
    pieces: list[TurnDelta] = []
    with pytest.raises(Transient, match="ended before the answer did") as failed:
        openai_for(wire, sleep).call(session_request(), on_delta=pieces.append)
    assert [p.text for p in pieces] == ["Half"] and len(wire.requests_to(CHAT)) == 1  # not given twice
    assert failed.value.record is not None and failed.value.record.attempts == 1

    wire.reply(CHAT, status=503, json_body={"error": {"message": "busy"}})
    wire.stream(CHAT, chunks({"role": "assistant", "content": "Whole."}, finish="stop"))
    assert openai_for(wire, sleep).call(session_request(), on_delta=pieces.append).turn.text == "Whole."
    assert len(wire.requests_to(CHAT)) == 3 and len(sleep.delays) == 1


def test_a_sink_that_stops_taking_pieces_ends_the_call_and_closes_the_upstream_stream(wire, sleep):
    parts = chunks({"role": "assistant", "content": "One."}, *({"content": " More."} for _ in range(40)),
                   finish="stop")
    wire.stream(CHAT, [(0.0 if i == 0 else 0.05, part) for i, (_, part) in enumerate(parts)])

    def leaving(piece: TurnDelta) -> None:
        raise StreamAbandoned("the client left")

    with pytest.raises(StreamAbandoned):
        openai_for(wire, sleep).call(session_request(), on_delta=leaving)
    assert len(wire.requests_to(CHAT)) == 1
    deadline = time.monotonic() + 3  # the 41 parts take 2 s: closed, the upstream's writes fail before
    while CHAT not in wire.cut_off and time.monotonic() < deadline:
        time.sleep(0.02)
    assert CHAT in wire.cut_off and len(wire.parts_sent) < 41


def anthropic_stream(*events: tuple[str, dict]) -> list[tuple[float, str]]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}
    return [(0.0, sse([("message_start", {"type": "message_start", "message": message}), *events]))]


def block(index: int, content: dict) -> tuple[str, dict]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": content}


def test_an_error_event_in_an_anthropic_stream_is_the_failure_its_type_names(wire, sleep):
    for _ in range(3):  # a transient failure before any piece: retried, to the policy's 3 attempts
        wire.stream("/v1/messages", anthropic_stream(
            block(0, {"type": "text", "text": ""}),
            ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})))
    with pytest.raises(Transient) as failed:
        anthropic_for(wire, sleep).call(session_request(), on_delta=lambda piece: None)
    assert failed.value.status == 529 and "Overloaded" in failed.value.message
    assert failed.value.record is not None and failed.value.record.attempts == 3


def test_an_anthropic_stream_cut_off_before_its_stop_is_a_failure_and_a_call_without_input_streams_braces(
        wire, sleep):
    wire.stream("/v1/messages", anthropic_stream(
        block(0, {"type": "text", "text": ""}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Half"}})))
    with pytest.raises(Transient, match="ended before the answer did"):
        anthropic_for(wire, sleep).call(session_request(), on_delta=lambda piece: None)

    wire.stream("/v1/messages", anthropic_stream(
        block(0, {"type": "tool_use", "id": "toolu_9", "name": "list_files", "input": {}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"})))
    pieces: list[TurnDelta] = []
    turn = anthropic_for(wire, sleep).call(session_request(), on_delta=pieces.append).turn
    assert joined(pieces)[1] == [("toolu_9", "list_files", {})] and turn.tool_calls[0].arguments == {}


def test_a_server_that_takes_no_stream_options_is_asked_again_without_them(wire, sleep):
    wire.reply(CHAT, status=400, json_body={"error": {"message": "Unrecognized request argument supplied: "
                                                                 "stream_options", "type": "invalid_request_error"}})
    wire.stream(CHAT, chunks({"role": "assistant", "content": "Fine."}, finish="stop"))
    assert openai_for(wire, sleep).call(session_request(), on_delta=lambda piece: None).turn.text == "Fine."
    first, second = (r.json for r in wire.requests_to(CHAT))
    assert "stream_options" in first and "stream_options" not in second and second["stream"] is True
