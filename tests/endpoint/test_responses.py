"""A Responses API client (what Codex CLI speaks) through the endpoint: OpenAI's SDK
``client.responses`` under a real Daphne, the local wire-protocol server upstream. Its
conversation is one session of the room, whatever the agent's provider: function tools
and free-form (custom) tools go upstream as functions and come back in the client's
shapes, streamed and not; what the gateway cannot serve is a 400 naming it."""

from __future__ import annotations

import json

import openai
import pytest

from endpoint.formats import FORMATS
from endpoint.models import GatewayConversation
from sessions.models import Observation, Session
from tests.endpoint.test_sessions import completion, sent, well_formed

pytestmark = pytest.mark.timeout(120)

TOOLS = [
    {"type": "function", "name": "shell", "description": "Run a command.",
     "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                    "required": ["command"]}},
    {"type": "custom", "name": "apply_patch", "description": "Apply a patch to files.",
     "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"}},
]
PATCH = "*** Begin Patch\n*** Update File: geo.py\n@@\n-    return 3.14 * r * r\n+    return math.pi * r * r\n*** End Patch"


def responses(hub, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=hub.url + "/v1", api_key=key, max_retries=0)


def test_a_responses_conversation_with_a_custom_and_a_function_tool_is_one_session(setup, wire, hub):
    wire.reply("/v1/chat/completions", json_body=completion(call=("apply_patch", {"input": PATCH}), n=1))
    wire.reply("/v1/chat/completions", json_body=completion(call=("shell", {"command": ["pytest", "-q"]}), n=2))
    wire.reply("/v1/chat/completions", json_body=completion(text="Fixed: the area uses math.pi.", n=3))
    client = responses(hub, setup.openai_key)
    history: list = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix geo.py"}]}]

    first = client.responses.create(model="gpt-5-codex", instructions="You are Codex.", input=history, tools=TOOLS,
                                    store=False)
    [patch] = first.output
    assert (patch.type, patch.name, patch.input) == ("custom_tool_call", "apply_patch", PATCH)
    assert first.usage.input_tokens == 100 and first.status == "completed"
    history += [patch.model_dump(exclude_none=True),
                {"type": "custom_tool_call_output", "call_id": patch.call_id, "output": "Done!"}]

    second = client.responses.create(model="gpt-5-codex", instructions="You are Codex.", input=history, tools=TOOLS,
                                     store=False)
    [shell] = second.output
    assert (shell.type, shell.name, json.loads(shell.arguments)) == ("function_call", "shell",
                                                                     {"command": ["pytest", "-q"]})
    history += [shell.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": shell.call_id, "output": "1 passed"}]

    third = client.responses.create(model="gpt-5-codex", instructions="You are Codex.", input=history, tools=TOOLS,
                                    store=False)
    assert third.output_text == "Fixed: the area uses math.pi."

    upstream = sent(wire)
    assert upstream[0]["messages"][0]["role"] == "system" and "You are Codex." in upstream[0]["messages"][0]["content"]
    functions = {t["function"]["name"]: t["function"]["parameters"] for t in upstream[0]["tools"]}
    assert functions["apply_patch"]["properties"]["input"]["type"] == "string"
    assert "start: begin_patch" in functions["apply_patch"]["properties"]["input"]["description"]
    assert [m["role"] for m in upstream[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert json.loads(upstream[2]["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    well_formed(upstream[2]["messages"])

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.agent.name == "gpt" and session.task.objective == "Fix geo.py"
    assert GatewayConversation.objects.get().requests == 3
    assert [o.tool for o in Observation.objects.filter(session=session).order_by("seq")] == ["apply_patch", "shell"]


def test_a_streamed_response_is_the_event_sequence_the_sdk_assembles(setup, wire, hub):
    wire.reply("/v1/chat/completions", json_body=completion(text="Reading it first.", call=("shell", {"command": ["ls"]}),
                                                            n=1))
    client = responses(hub, setup.openai_key)
    with client.responses.stream(model="m", input="List the files", tools=TOOLS, store=False) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Reading it first."
    assert [(item.type, getattr(item, "name", None)) for item in final.output] == [("message", None),
                                                                                   ("function_call", "shell")]
    assert json.loads(final.output[1].arguments) == {"command": ["ls"]}


def test_an_anthropic_agent_answers_a_responses_client(setup, wire, hub):
    wire.reply("/v1/messages", json_body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "apply_patch", "input": {"input": PATCH}}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 9, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0}})
    answer = responses(hub, setup.anthropic_key).responses.create(model="m", input="Fix geo.py", tools=TOOLS,
                                                                  store=False)
    assert (answer.output[0].type, answer.output[0].input) == ("custom_tool_call", PATCH)
    upstream = wire.requests_to("/v1/messages")[-1].json
    assert {t["name"] for t in upstream["tools"]} == {"shell", "apply_patch"}


@pytest.mark.parametrize(("extra", "named"), [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"tools": [*TOOLS, {"type": "local_shell"}]}, "tools[2]"),
    ({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}, "input[0]"),
    ({"tools": [{"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": ["x"]}]}]},
     "tools[0].tools[0].name"),
    ({"tools": [{"type": "namespace", "name": "ns", "tools": [TOOLS[1]]}]}, "tools[0].tools[0]"),
    ({"input": [{"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": {"a": 1}}]},
     "input[0].input"),
    ({"text": "json"}, "text"),
])
def test_what_the_gateway_cannot_serve_is_a_400_naming_it(setup, hub, extra, named):
    body = {"model": "m", "input": "hi", "store": False, **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        responses(hub, setup.openai_key).responses.create(**body)
    assert refused.value.body["param"] == named, refused.value.body


def test_runs_that_start_alike_are_sessions_of_their_own_by_their_prompt_cache_key(setup, wire, hub):
    """Codex names each run by its session id in ``prompt_cache_key``; two runs in one
    folder begin with the same instructions, tools and environment note."""
    client = responses(hub, setup.openai_key)
    for run in ("run-one", "run-two"):
        wire.reply("/v1/chat/completions", json_body=completion(text="Hello.", n=1))
        raw = client.responses.with_raw_response.create(model="m", input="Say hello", tools=TOOLS, store=False,
                                                        prompt_cache_key=run, reasoning={"summary": "auto"})
        assert raw.parse().output_text == "Hello."
        assert raw.headers["X-Atrium-Ignored-Params"] == "prompt_cache_key, reasoning.summary, store"
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 2


def test_a_responses_request_translates_to_the_neutral_shapes_and_back():
    wire_format = FORMATS["responses"]
    request = wire_format.request({"model": "m", "instructions": "Be brief.", "input": [
        {"role": "developer", "content": "Rule."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                         {"type": "input_text", "text": "b"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\": [\"ls\"]}"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": PATCH},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "Done!"}]},
    ], "tools": TOOLS, "max_output_tokens": 500}, "claude")
    assert request.system == "Be brief.\n\nRule." and request.max_tokens == 500
    assert [(m.role, m.text) for m in request.messages] == [
        ("user", "a\n\nb"), ("assistant", "Looking."), ("tool", "a.py"), ("tool", "Done!")]
    assert [(c.name, c.arguments) for c in request.messages[1].tool_calls] == [
        ("shell", {"command": ["ls"]}), ("apply_patch", {"input": PATCH})]
    assert [m.tool_name for m in request.messages[2:]] == ["shell", "apply_patch"]
