"""OpenAI's Chat Completions (``POST /v1/chat/completions``), as the endpoint speaks it."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from typing import Any

import openai

from agents.providers.toolcalls import arguments_text, parse_arguments
from endpoint.formats.base import (
    ParamRules,
    TurnEvents,
    WireFormat,
    boolean,
    never,
    new_id,
    number,
    string,
    strings,
)
from endpoint.formats.events import ChunkEvents
from endpoint.wire import WireError, check_number, check_positive_int, check_type
from observations.gateway.messages import (
    NO_PARAMS,
    Message,
    ModelTurn,
    Params,
    Request,
    ToolCall,
    ToolChoice,
    ToolSchema,
)

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}

RULES = ParamRules(
    handled=frozenset({"model", "messages", "tools", "stream", "stream_options", "max_tokens",
                       "max_completion_tokens"}),
    translated=frozenset({"temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls", "user"}),
    unserved={
        "n": (lambda v: v == 1, "the gateway answers with one choice: send 1 or leave it out"),
        "logprobs": (lambda v: v is False, "the gateway does not return log probabilities"),
        "top_logprobs": (lambda v: v == 0, "the gateway does not return log probabilities"),
        "audio": (never, "the gateway answers in text"),
        "modalities": (lambda v: v == ["text"], "the gateway answers in text"),
        "functions": (never, "send `tools` instead (the gateway reads tools only)"),
        "function_call": (never, "send `tool_choice` instead (the gateway reads tools only)"),
        "web_search_options": (never, "the gateway does not return a search's annotations"),
    },
    untranslatable={
        "presence_penalty": lambda v: v == 0,
        "frequency_penalty": lambda v: v == 0,
        "logit_bias": lambda v: not v,
        "verbosity": never,
    },
    gateways_own=frozenset(),
    converted=frozenset({"response_format", "reasoning_effort"}),
    temperature_max=2.0,
)


class OpenAIChat(WireFormat):
    name = "openai"
    provider_words = "an OpenAI"
    rules = RULES
    sdk = openai
    withheld_also = ("OpenAI-Organization", "OpenAI-Project")
    challenge = 'Bearer realm="atrium"'

    # --- the request -------------------------------------------------------------------
    def check(self, body: Mapping[str, Any]) -> None:
        check_type(body, "model", str, required=True)
        messages = check_type(body, "messages", list, required=True)
        if not messages:
            raise WireError("messages: must hold at least one message.", param="messages")
        for i, message in enumerate(messages):
            _check_message(i, message)
        _check_tools(body)
        check_type(body, "stream", bool)
        check_type(body, "stream_options", dict)
        for field in ("max_tokens", "max_completion_tokens", "n"):
            check_positive_int(body, field)
        for field in ("temperature", "top_p"):
            check_number(body, field)

    def request(self, body: dict[str, Any], model: str, params: Params = NO_PARAMS) -> Request:
        system: list[str] = []
        messages: list[Message] = []
        names: dict[str, str] = {}
        for i, wire in enumerate(body["messages"]):
            role, where = wire["role"], f"messages[{i}]"
            text = _text(wire.get("content"), where)
            if role in ("system", "developer"):
                system.append(text)
            elif role == "user":
                messages.append(Message("user", text))
            elif role == "assistant":
                calls = tuple(ToolCall(c["id"], c["function"]["name"], parse_arguments(c["function"].get("arguments")))
                              for c in wire.get("tool_calls") or ())
                names.update((c.id, c.name) for c in calls)
                messages.append(Message("assistant", text, tool_calls=calls))
            elif role == "tool":
                call_id = wire["tool_call_id"]
                messages.append(Message("tool", text, tool_call_id=call_id, tool_name=names.get(call_id)))
            else:
                raise WireError(f"{where}.role: `{role}` messages cannot be translated", param=f"{where}.role")
        tools = tuple(ToolSchema(t["function"]["name"], t["function"].get("description") or "",
                                 t["function"].get("parameters") or {"type": "object", "properties": {}})
                      for t in body.get("tools") or ())
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        return Request(model=model, system="\n\n".join(system), tools=tools, messages=tuple(messages),
                       max_tokens=limit, params=params)

    def params(self, body: Mapping[str, Any]) -> Params:
        stop = body.get("stop")
        if isinstance(stop, str):
            stop = [stop]
        return Params(
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
            stop=strings(stop, "stop", "a string or an array of strings"),
            tool_choice=_tool_choice(body.get("tool_choice")),
            parallel_tool_calls=boolean(body, "parallel_tool_calls"),
            user=string(body.get("user"), "user"),
        )

    def converted(self, params: Params, body: Mapping[str, Any], upstream: WireFormat, model: str) -> Params:
        schema = _schema(body.get("response_format"), upstream)
        effort = body.get("reasoning_effort")
        if effort is not None and upstream.efforts is not None and effort not in upstream.efforts:
            raise WireError(
                f"reasoning_effort: this key's agent runs {upstream.provider_words} model, whose efforts are "
                f"{', '.join(upstream.efforts)}.",
                param="reasoning_effort",
            )
        return dataclasses.replace(params, json_schema=schema, effort=effort)

    def tool_names(self, tools: list[dict[str, Any]]) -> set[str | None]:
        return {(t.get("function") or {}).get("name") for t in tools}

    # --- the answer --------------------------------------------------------------------
    def response(self, turn: ModelTurn, model: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": arguments_text(c.arguments)}}
                                     for c in turn.tool_calls]
        return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                "model": turn.model or model,
                "choices": [{"index": 0, "message": message, "finish_reason": _finish(turn), "logprobs": None}],
                "usage": _usage(turn)}

    def events(self, model: str, body: Mapping[str, Any]) -> TurnEvents:
        return ChunkEvents(model, body, lambda turn: self.response(turn, model))

    def error_body(self, error: WireError) -> dict[str, Any]:
        return {"error": {"message": error.message, "type": error.kind, "param": error.param, "code": error.code}}

    def sse_error(self, error: WireError) -> bytes:
        return f"data: {json.dumps(self.error_body(error))}\n\n".encode()

    def models(self, model: str, *, created: int) -> dict[str, Any]:
        return {"object": "list",
                "data": [{"id": model, "object": "model", "created": created, "owned_by": "atrium"}]}

    def rebuilt_error(self, fields: dict[str, str]) -> dict[str, Any]:
        return {"error": fields}

    # --- the pass-through --------------------------------------------------------------
    def async_client_class(self) -> Any:
        return openai.AsyncOpenAI

    def relay_call(self, client: Any, *, model: str, body: dict[str, Any], extra_headers: dict[str, str],
                   timeout: float) -> Any:
        # The body as the client wrote it, past the SDK's rewriting (agents.providers.sdk_body):
        # the history too, which the SDK requires, is left empty in its place.
        rest = {k: v for k, v in body.items() if k != "model"}
        return client.chat.completions.with_streaming_response.create(
            model=model, messages=[], extra_body=rest, extra_headers=extra_headers)

    def answer_shaped(self, answer: dict[str, Any]) -> bool:
        return isinstance(answer.get("choices"), list)


OPENAI_CHAT = OpenAIChat()


def _check_message(i: int, message: Any) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise WireError(f"{where}: must be an object.", param=where)
    role = message.get("role")
    if role not in ROLES:
        raise WireError(f"{where}.role: must be one of {', '.join(sorted(ROLES))}.", param=f"{where}.role")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise WireError(f"{where}.content: must be a string or a list of parts.", param=f"{where}.content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise WireError(f"{where}.tool_call_id: required for a tool message.", param=f"{where}.tool_call_id")
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise WireError(f"{where}.tool_calls: must be a list on an assistant message.",
                            param=f"{where}.tool_calls")
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                    or not isinstance(call.get("id"), str):
                raise WireError(f"{where}.tool_calls[{j}]: needs an `id` and a `function` with a `name`.",
                                param=f"{where}.tool_calls[{j}]")
            if "arguments" in function and not isinstance(function["arguments"], str):
                raise WireError(f"{where}.tool_calls[{j}].function.arguments: must be a string of JSON.",
                                param=f"{where}.tool_calls[{j}].function.arguments")


def _check_tools(body: Mapping[str, Any]) -> None:
    tools = check_type(body, "tools", list)
    for i, tool in enumerate(tools or ()):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            raise WireError(f"{where}: must be an object of type `function`.", param=where)
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise WireError(f"{where}.function.name: Field required", param=f"{where}.function.name")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise WireError(f"{where}.function.parameters: must be a JSON Schema object.",
                            param=f"{where}.function.parameters")


def _text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise WireError(f"{where}.content[{j}]: only text parts translate to this key's agent, not `{kind}`",
                            param=f"{where}.content[{j}]")
        texts.append(part["text"])
    return "".join(texts)


def _tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    function = value.get("function") if isinstance(value, dict) and value.get("type") == "function" else None
    if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
        return ToolChoice("tool", function["name"])
    raise WireError(
        "tool_choice: must be `auto`, `none`, `required` or "
        '{"type": "function", "function": {"name": ...}}.',
        param="tool_choice",
    )


def _schema(response_format: Any, upstream: WireFormat) -> Mapping[str, Any] | None:
    """The JSON Schema a ``response_format`` asks for; the other provider has no JSON mode
    without a schema."""
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if response_format is None or kind == "text":
        return None
    spec = response_format.get("json_schema") if kind == "json_schema" else None
    if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
        return spec["schema"]
    raise WireError(
        f"response_format: this key's agent runs {upstream.provider_words} model, which takes a JSON Schema "
        '({"type": "json_schema", "json_schema": {"schema": ...}}) and no other format.',
        param="response_format",
    )


def _finish(turn: ModelTurn) -> str:
    return "tool_calls" if turn.tool_calls else _FINISH.get(turn.stop_reason, "stop")


def _usage(turn: ModelTurn) -> dict[str, Any]:
    usage = turn.usage
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens}}
