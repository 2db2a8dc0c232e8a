"""How a request its client did not name finds its conversation (endpoint.routing): by
the latest of the gateway's answers its history holds, looked up alone, and by the
earlier ones only when the client changed that one. Every answer of the history was
read on every request, each row with its conversation's digests: hundreds of rows, a
decoded list each, on a long session's every request."""

from __future__ import annotations

import json

from django.db import connection
from django.test.utils import CaptureQueriesContext

from endpoint.conversation import answer_digests, message_digests
from endpoint.formats import FORMATS
from endpoint.models import GatewayKey
from endpoint.routing import routed
from endpoint.sessions import proxied_turn
from tests.endpoint.conftest import owner, setup, wire  # noqa: F401
from tests.endpoint.test_sessions import FILE, TOOLS, completion


def _history(key: GatewayKey, wire, conversation: str, steps: int) -> list[dict]:  # noqa: F811
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": f"Fix {conversation}"}]
    for n in range(steps):
        wire.reply("/v1/chat/completions",
                   json_body=completion(text=f"Step {n}.", call=("read_file", {"path": f"src/m{n}.py"}), n=n))
        turn = proxied_turn(key=key, conversation=conversation, request=_request(messages))
        call = turn.tool_calls[0]
        messages += [{"role": "assistant", "content": turn.text, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
            {"role": "tool", "tool_call_id": call.id, "content": f"{FILE}# {n}\n"}]
    return messages


def _request(messages: list[dict]):
    return FORMATS["openai"].request({"model": "m", "messages": messages, "tools": TOOLS}, "gpt-4.1")


def _routed_counted(key: GatewayKey, messages: list[dict]) -> tuple[str | None, list[str]]:
    request = _request(messages)
    with CaptureQueriesContext(connection) as queries:
        found = routed(key, message_digests(request.messages), answer_digests(request.messages))
    return found, [q["sql"] for q in queries.captured_queries]


def test_a_request_is_routed_by_its_latest_answer_alone_and_by_an_earlier_one_when_the_client_changed_it(
        setup, wire):  # noqa: F811
    key = GatewayKey.objects.get(agent__name="gpt")
    other = _history(key, wire, "s:other", 3)
    messages = _history(key, wire, "s:mine", 4)
    found, sql = _routed_counted(key, messages)
    answers = [d for d in answer_digests(_request(messages).messages) if d]
    assert found == "s:mine" and len(sql) == 1 and len(answers) == 4
    assert answers[-1] in sql[0] and not any(earlier in sql[0] for earlier in answers[:-1])
    assert _routed_counted(key, other)[0] == "s:other"
    # The client rewrote the gateway's latest answer: the one before it still names the conversation.
    messages[-2]["content"] = "Step 3, as the client retold it."
    found, sql = _routed_counted(key, messages)
    assert found == "s:mine" and len(sql) == 2
    # A history that holds none of the gateway's answers is looked up nowhere.
    assert _routed_counted(key, messages[:2]) == (None, [])
