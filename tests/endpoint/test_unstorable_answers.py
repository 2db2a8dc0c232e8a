"""An upstream's answer with a NUL or half a surrogate pair (its JSON may escape either)
is given to the client and stored the same, cleaned: the client's next history, which
holds it, continues the session. Before, saving the turn failed (PostgreSQL refuses
both) and the client got a 500 for an answer the upstream had given. Through the
official SDK and a real Daphne, streamed and not."""

from __future__ import annotations

import json

import pytest

from sessions.models import Session, SessionEvent
from tests.endpoint.test_sessions import FILE, PATH, TOOLS, client, completion
from tests.endpoint.test_streaming import chat_chunks

pytestmark = pytest.mark.timeout(120)

RAW, CLEAN = "half \ud83d a pair, a NUL \x00 and \udc80", "half \ufffd a pair, a NUL \u2400 and \ufffd"


def _continues(gateway, wire, messages: list[dict], text: str, call_id: str, arguments: str) -> None:
    """The client's next request, with the answer as it was given: the same session,
    no new segment."""
    messages += [{"role": "assistant", "content": text, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": FILE}]
    wire.reply(PATH, json_body=completion(text="Fixed.", n=2))
    assert gateway.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message.content \
        == "Fixed."
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert not SessionEvent.objects.filter(session=session, kind="segment.started").exists()
    replies = SessionEvent.objects.filter(session=session, kind="model.reply").order_by("seq")
    assert [r.payload["text"] for r in replies] == [CLEAN, "Fixed."]


def test_an_answer_it_cannot_store_is_given_and_stored_cleaned_and_the_session_goes_on(setup, wire, hub):
    wire.reply(PATH, json_body=completion(text=RAW, call=("read_file", {"path": "src/\udc80.py"}), n=1))
    gateway = client(hub, setup.openai_key)
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    answer = gateway.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
    assert answer.content == CLEAN
    assert json.loads(answer.tool_calls[0].function.arguments) == {"path": "src/\ufffd.py"}
    _continues(gateway, wire, messages, answer.content, answer.tool_calls[0].id, answer.tool_calls[0].function.arguments)


def test_a_streamed_answer_it_cannot_store_is_given_and_stored_cleaned_and_the_session_goes_on(setup, wire, hub):
    wire.stream(PATH, [(0.0, part) for part in chat_chunks([
        {"role": "assistant", "content": RAW[:8]}, {"content": RAW[8:]},
        {"tool_calls": [{"index": 0, "id": "call_7", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\": \"geo.py\"}"}}]},
    ], finish="tool_calls")])
    gateway = client(hub, setup.openai_key)
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    chunks = list(gateway.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == CLEAN
    _continues(gateway, wire, messages, text, "call_7", "{\"path\": \"geo.py\"}")
