"""The endpoint's request checks and error bodies, plain Python."""

from __future__ import annotations

import json

import pytest

from endpoint.formats import FORMATS
from endpoint.wire import WireError, parse_body, unauthorized

OPENAI, ANTHROPIC = FORMATS["openai"], FORMATS["anthropic"]

CHAT = {"model": "m", "messages": [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "text"},
], "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
    "stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 100, "temperature": 0,
    "some_future_field": {"passes": "through"}}
MESSAGES = {"model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "be brief"}], "messages": [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "text"}]},
], "tools": [{"name": "read", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web"}],
    "stream": False}


def test_well_formed_requests_of_both_formats_pass():
    OPENAI.check(CHAT)
    ANTHROPIC.check(MESSAGES)


@pytest.mark.parametrize("raw", [b"", b"nul", b"\xff", b"1", b'"s"', b"null", b"[]"])
def test_a_body_that_is_not_a_json_object_is_refused(raw):
    with pytest.raises(WireError) as caught:
        parse_body(raw)
    assert caught.value.status == 400


# JSON text of a string, as a client writes it, and the text it stands for.
WHOLE_UNICODE = [
    (rb'"\ud83d\ude00"', "\U0001f600"), (rb'"\uD83D\uDE00"', "\U0001f600"),  # a pair: one character
    (rb'"a\\ud800"', "a\\ud800"),  # an escaped backslash, then letters
    (rb'"\\\ud83d\ude00"', "\\\U0001f600"), (rb'"\ud7ff\ue000"', "\ud7ff\ue000"), ('"é"'.encode(), "é"),
]
HALF_A_PAIR = [
    rb'"\ud83d"', rb'"\ude00"', rb'"x\ud83d y"', rb'"\ud83d\ud83d\ude00"', rb'"\ude00\ud83d"',
    rb'"\\ud83d\ude00"',  # the backslash is escaped: the low half stands alone
    rb'"\\\\\udbff"',
]
NOT_UTF8 = [b'{"content": "\xed\xa0\xbd"}', '{"content": "é"}'.encode("utf-16")]  # a surrogate in bytes; UTF-16


@pytest.mark.parametrize(("text", "meant"), WHOLE_UNICODE)
def test_escapes_of_whole_characters_pass(text, meant):
    assert parse_body(b'{"content": ' + text + b', ' + text + b': 1}') == {"content": meant, meant: 1}
    assert parse_body(b"\xef\xbb\xbf" + b'{"content": ' + text + b"}") == {"content": meant}  # a UTF-8 BOM


@pytest.mark.parametrize("text", HALF_A_PAIR)
def test_half_of_a_surrogate_pair_is_refused_wherever_it_is(text):
    for raw in (b'{"content": ' + text + b"}", b"{" + text + b": 1}"):
        with pytest.raises(WireError, match="half of a surrogate pair") as caught:
            parse_body(raw)
        assert caught.value.status == 400


@pytest.mark.parametrize("raw", NOT_UTF8)
def test_a_body_not_in_utf8_is_refused(raw):
    with pytest.raises(WireError, match="not valid JSON"):
        parse_body(raw)


def test_booleans_are_not_numbers():
    for field in ("max_tokens", "temperature"):
        with pytest.raises(WireError, match=field):
            OPENAI.check({**CHAT, field: True})
    with pytest.raises(WireError, match="max_tokens"):
        ANTHROPIC.check({**MESSAGES, "max_tokens": True})


def test_error_bodies_are_each_providers_shape():
    error = unauthorized()
    assert error.status == 401
    assert OPENAI.error_body(error) == {"error": {"message": error.message, "type": "authentication_error",
                                                     "param": None, "code": "invalid_api_key"}}
    assert ANTHROPIC.error_body(error) == {"type": "error", "error": {"type": "authentication_error",
                                                                         "message": error.message}}
    event = ANTHROPIC.sse_error(WireError("broke", kind="api_error")).decode()
    assert event.startswith("event: error\ndata: ") and event.endswith("\n\n")
    assert json.loads(OPENAI.sse_error(WireError("broke")).decode()[len("data: "):])["error"]["message"] == "broke"


def test_model_lists_are_each_sdks_shape():
    assert OPENAI.models("gpt-4.1", created=0)["data"][0] == {
        "id": "gpt-4.1", "object": "model", "created": 0, "owned_by": "atrium"}
    anthropic_list = ANTHROPIC.models("claude", created=0)
    assert anthropic_list["data"][0]["created_at"] == "1970-01-01T00:00:00Z"
    assert anthropic_list["has_more"] is False
