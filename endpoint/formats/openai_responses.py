"""OpenAI's Responses API (``POST /v1/responses``), as the endpoint speaks it: what
Codex CLI speaks, and OpenAI's SDK's ``client.responses``.

The gateway keeps no response (a ``store: false`` conversation: the client sends its
whole input each time, as Codex does), so ``previous_response_id`` is refused with what
to send instead. Input items translate to the neutral shapes: messages (``input_text``,
``output_text``), ``function_call`` / ``function_call_output`` and ``custom_tool_call`` /
``custom_tool_call_output`` (a free-form tool, such as Codex's ``apply_patch``, becomes a
function of one string argument ``input`` and comes back as a custom call). Built-in tools
the provider runs itself (``web_search``, ``file_search``, ``mcp``, ...) are left out and
named in the ignored-parameters header; tools a client runs that have no neutral shape
(``local_shell``, ``computer_use_preview``) and reasoning items are a 400 naming them. A
``namespace`` groups function tools: each goes upstream under its own name and comes back
with its namespace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from agents.providers.toolcalls import arguments_text, parse_arguments
from endpoint.formats.base import (
    ParamRules,
    TurnEvents,
    WireFormat,
    boolean,
    never,
    new_id,
    number,
    sse_event,
    string,
)
from endpoint.formats.events import ResponseEvents
from endpoint.formats.openai_chat import OPENAI_CHAT
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

ROLES = frozenset({"system", "developer", "user", "assistant"})
# Tools the provider runs on its own servers (a search, a code sandbox, a remote MCP
# server): through the gateway the model has none of them; left out and named, so a
# client that offers them by default (Codex's web_search) still works.
HOSTED = frozenset({"web_search", "web_search_preview", "file_search", "code_interpreter", "image_generation",
                    "mcp"})
CUSTOM_INPUT = "input"  # the one argument a free-form tool's function takes
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})

RULES = ParamRules(
    handled=frozenset({"model", "input", "instructions", "tools", "stream", "max_output_tokens"}),
    translated=frozenset({"temperature", "top_p", "tool_choice", "parallel_tool_calls", "user"}),
    unserved={
        "previous_response_id": (never, "the gateway keeps no responses: send the whole conversation as "
                                        "`input`, with `store` false"),
        "conversation": (never, "the gateway keeps no conversations: send the whole conversation as `input`"),
        "prompt": (never, "the gateway has no stored prompts: send `instructions` and `input`"),
        "background": (lambda v: v is False, "the gateway answers in the foreground"),
        "top_logprobs": (lambda v: v == 0, "the gateway does not return log probabilities"),
    },
    untranslatable={},
    # What the gateway decides itself (it keeps nothing, caches its own way, returns no
    # encrypted reasoning): ignored and named.
    gateways_own=frozenset({"store", "include", "truncation", "prompt_cache_key", "prompt_cache_retention"}),
    converted=frozenset({"reasoning", "text"}),
    temperature_max=2.0,
)


class OpenAIResponses(WireFormat):
    name = "responses"
    provider_words = "an OpenAI"
    rules = RULES
    challenge = 'Bearer realm="atrium"'

    # --- the request -------------------------------------------------------------------
    def check(self, body: Mapping[str, Any]) -> None:
        check_type(body, "model", str, required=True)
        items = body.get("input")
        if not isinstance(items, str | list) or not items:
            raise WireError("input: must be a string or a non-empty array of input items.", param="input")
        for i, item in enumerate(items if isinstance(items, list) else ()):
            _check_item(i, item)
        check_type(body, "instructions", str)
        tools = check_type(body, "tools", list)
        for i, tool in enumerate(tools or ()):
            _check_tool(f"tools[{i}]", tool)
            if tool["type"] == "namespace":
                if not isinstance(tool.get("tools"), list):
                    raise WireError(f"tools[{i}].tools: must be an array of function tools.", param=f"tools[{i}].tools")
                for j, inner in enumerate(tool["tools"]):
                    _check_tool(f"tools[{i}].tools[{j}]", inner)
                    if inner["type"] != "function":
                        raise WireError(f"tools[{i}].tools[{j}]: a namespace holds function tools only.",
                                        param=f"tools[{i}].tools[{j}]")
        for field in ("reasoning", "text"):
            check_type(body, field, dict)
        check_type(body, "stream", bool)
        check_positive_int(body, "max_output_tokens")
        for field in ("temperature", "top_p"):
            check_number(body, field)

    def request(self, body: dict[str, Any], model: str, params: Params = NO_PARAMS) -> Request:
        instructions = body.get("instructions")
        system: list[str] = [instructions] if instructions else []
        items = body["input"]
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        messages: list[Message] = []
        names: dict[str, str] = {}
        for i, item in enumerate(items):
            kind, where = item.get("type", "message"), f"input[{i}]"
            if kind == "message":
                role, text = item["role"], _text(item.get("content"), where)
                if role in ("system", "developer"):
                    system.append(text)
                else:
                    messages.append(Message(role, text))
            elif kind in ("function_call", "custom_tool_call"):
                arguments = (parse_arguments(item.get("arguments")) if kind == "function_call"
                             else {CUSTOM_INPUT: item["input"]})
                call = ToolCall(item["call_id"], item["name"], arguments)
                names[call.id] = call.name
                if messages and messages[-1].role == "assistant":  # the calls of one turn, after its text
                    last = messages[-1]
                    messages[-1] = dataclasses.replace(last, tool_calls=(*last.tool_calls, call))
                else:
                    messages.append(Message("assistant", "", tool_calls=(call,)))
            elif kind in ("function_call_output", "custom_tool_call_output"):
                call_id = item["call_id"]
                messages.append(Message("tool", _output(item.get("output"), where), tool_call_id=call_id,
                                        tool_name=names.get(call_id)))
            else:
                raise WireError(f"{where}: a `{kind}` item cannot be translated to this key's agent",
                                param=where)
        tools = tuple(_tools(body.get("tools") or ()))
        return Request(model=model, system="\n\n".join(system), tools=tools, messages=tuple(messages),
                       max_tokens=body.get("max_output_tokens") or 0, params=params)

    def params(self, body: Mapping[str, Any]) -> Params:
        return Params(
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
            tool_choice=_tool_choice(body.get("tool_choice")),
            parallel_tool_calls=boolean(body, "parallel_tool_calls"),
            user=string(body.get("user"), "user"),
        )

    def converted(self, params: Params, body: Mapping[str, Any], upstream: WireFormat, model: str) -> Params:
        reasoning = body.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, dict):
            raise WireError("reasoning: must be an object.", param="reasoning")
        effort = (reasoning or {}).get("effort")
        if effort is not None and (not isinstance(effort, str)
                                   or (upstream.efforts is not None and effort not in upstream.efforts)):
            words = f"whose efforts are {', '.join(upstream.efforts)}" if upstream.efforts else "which takes a string"
            raise WireError(f"reasoning.effort: this key's agent runs {upstream.provider_words} model, {words}.",
                            param="reasoning.effort")
        return dataclasses.replace(params, json_schema=_schema(body.get("text"), upstream), effort=effort)

    def conversation_id(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
        key = body.get("prompt_cache_key")  # Codex sets it to its session's id
        return key if isinstance(key, str) and key else None

    def dropped(self, body: Mapping[str, Any], upstream: WireFormat, model: str) -> tuple[str, ...]:
        hosted = [f"tools.{tool['type']}" for tool in body.get("tools") or () if tool["type"] in HOSTED]
        settings = [f"{field}.{name}" for field, kept in (("reasoning", {"effort"}), ("text", {"format"}))
                    for name in sorted((body.get(field) or {}).keys() - kept)]
        return (*hosted, *settings)

    def tool_names(self, tools: list[dict[str, Any]]) -> set[str | None]:
        return set(_namespaces(tools)) | {t.get("name") for t in tools if t["type"] != "namespace"}

    # --- the answer --------------------------------------------------------------------
    def response(self, turn: ModelTurn, model: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body = body or {}
        offered = body.get("tools") or ()
        custom = {t.get("name") for t in offered if t.get("type") == "custom"}
        namespaces = _namespaces(offered)
        output: list[dict[str, Any]] = []
        if turn.text:
            output.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
        for call in turn.tool_calls:
            if call.name in custom:
                value = call.arguments.get(CUSTOM_INPUT) if isinstance(call.arguments, dict) else None
                output.append({"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call.id,
                               "name": call.name, "input": value if isinstance(value, str) else
                               arguments_text(call.arguments), "status": "completed"})
            else:
                item = {"type": "function_call", "id": new_id("fc_"), "call_id": call.id, "name": call.name,
                        "arguments": arguments_text(call.arguments), "status": "completed"}
                if call.name in namespaces:
                    item["namespace"] = namespaces[call.name]
                output.append(item)
        cut = turn.stop_reason == "max_tokens" and not turn.tool_calls
        usage = turn.usage
        return {
            "id": new_id("resp_"), "object": "response", "created_at": int(time.time()),
            "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None, "error": None,
            "model": turn.model or model, "output": output, "instructions": body.get("instructions"),
            "tools": list(body.get("tools") or ()), "tool_choice": body.get("tool_choice") or "auto",
            "parallel_tool_calls": body.get("parallel_tool_calls", True) is not False,
            "temperature": body.get("temperature"), "top_p": body.get("top_p"),
            "max_output_tokens": body.get("max_output_tokens"), "metadata": {}, "store": False,
            "text": {"format": {"type": "text"}},
            "usage": {"input_tokens": usage.input_tokens,
                      "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
                      "output_tokens": usage.output_tokens,
                      "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                      "total_tokens": usage.input_tokens + usage.output_tokens},
        }

    def events(self, model: str, body: Mapping[str, Any]) -> TurnEvents:
        offered = body.get("tools") or ()
        return ResponseEvents(model, body, lambda turn: self.response(turn, model, body),
                              custom={t.get("name") for t in offered if t.get("type") == "custom"},
                              namespaces=_namespaces(offered))

    def error_body(self, error: WireError) -> dict[str, Any]:
        return OPENAI_CHAT.error_body(error)  # the same SDK reads both

    def sse_error(self, error: WireError) -> bytes:
        # `error` in the data is what the SDK raises from; the rest is the Responses error event.
        return sse_event("error", {"type": "error", "code": error.code or error.kind, "message": error.message,
                                   "param": error.param, **self.error_body(error)})

    def models(self, model: str, *, created: int) -> dict[str, Any]:
        return OPENAI_CHAT.models(model, created=created)


OPENAI_RESPONSES = OpenAIResponses()


def _check_tool(where: str, tool: Any) -> None:
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        raise WireError(f"{where}: must be an object with a `type`.", param=where)
    named = tool["type"] in ("function", "custom", "namespace")
    if (named or "name" in tool) and not (isinstance(tool.get("name"), str) and tool["name"]):
        raise WireError(f"{where}.name: must be a non-empty string.", param=f"{where}.name")
    if tool.get("parameters") is not None and not isinstance(tool["parameters"], dict):
        raise WireError(f"{where}.parameters: must be a JSON Schema object.", param=f"{where}.parameters")


def _check_item(i: int, item: Any) -> None:
    where = f"input[{i}]"
    if not isinstance(item, dict):
        raise WireError(f"{where}: must be an object.", param=where)
    kind = item.get("type", "message")
    if kind == "message":
        if item.get("role") not in ROLES:
            raise WireError(f"{where}.role: must be one of {', '.join(sorted(ROLES))}.", param=f"{where}.role")
        if not isinstance(item.get("content"), str | list):
            raise WireError(f"{where}.content: must be a string or an array of content parts.",
                            param=f"{where}.content")
    elif kind in ("function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output"):
        if not isinstance(item.get("call_id"), str):
            raise WireError(f"{where}.call_id: Field required", param=f"{where}.call_id")
        if kind in ("function_call", "custom_tool_call") and not isinstance(item.get("name"), str):
            raise WireError(f"{where}.name: Field required", param=f"{where}.name")
        if kind == "function_call" and not isinstance(item.get("arguments"), str):
            raise WireError(f"{where}.arguments: must be a string of JSON.", param=f"{where}.arguments")
        if kind == "custom_tool_call" and not isinstance(item.get("input"), str):
            raise WireError(f"{where}.input: must be a string.", param=f"{where}.input")


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS or not isinstance(part.get("text"), str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise WireError(f"{where}.content[{j}]: only text parts translate to this key's agent, not `{kind}`",
                            param=f"{where}.content[{j}]")
        texts.append(part["text"])
    return "\n\n".join(texts)


def _output(output: Any, where: str) -> str:
    """A tool call's output: a string, or text parts."""
    if output is None or isinstance(output, str):
        return output or ""
    if isinstance(output, list):
        return _text(output, where)
    raise WireError(f"{where}.output: must be a string or an array of text parts.", param=f"{where}.output")


def _tools(offered: list[dict[str, Any]]):
    """The function and free-form tools, a namespace's among them; the hosted ones left out."""
    seen: set[str] = set()
    for i, tool in enumerate(offered):
        inner = list(enumerate(tool["tools"])) if tool["type"] == "namespace" else [(None, tool)]
        for j, one in inner:
            where = f"tools[{i}]" if j is None else f"tools[{i}].tools[{j}]"
            if one.get("type") in HOSTED:
                continue
            schema = _tool(where, one)
            if schema.name in seen:
                raise WireError(f"{where}: a second tool named {schema.name!r}; tool names must differ, "
                                "namespaces included.", param=where)
            seen.add(schema.name)
            yield schema


def _namespaces(offered) -> dict[str, str]:
    """Each namespaced tool's name, to its namespace."""
    return {inner.get("name"): tool["name"] for tool in offered if tool.get("type") == "namespace"
            for inner in tool.get("tools") or ()}


def _tool(where: str, tool: dict[str, Any]) -> ToolSchema:
    kind, description = tool.get("type"), tool.get("description") or ""
    if kind in ("function", "custom") and not (isinstance(tool.get("name"), str) and tool["name"]):
        raise WireError(f"{where}.name: Field required", param=f"{where}.name")
    if kind == "function":
        return ToolSchema(tool["name"], description, tool.get("parameters") or {"type": "object", "properties": {}})
    if kind == "custom":
        how = _format_hint(tool.get("format"))
        return ToolSchema(tool["name"], description, {
            "type": "object", "required": [CUSTOM_INPUT], "additionalProperties": False,
            "properties": {CUSTOM_INPUT: {"type": "string", "description": how}},
        })
    raise WireError(f"{where}: the tool type `{kind}` has no translation for this key's agent; leave it out or "
                    "offer a function tool instead.", param=where)


def _format_hint(spec: Any) -> str:
    """What the one string argument of a free-form tool must hold."""
    if isinstance(spec, dict) and spec.get("type") == "grammar" and isinstance(spec.get("definition"), str):
        return f"The raw input, in this {spec.get('syntax', 'grammar')} grammar:\n{spec['definition']}"
    return "The raw input of the tool, as free text."


def _tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    if isinstance(value, dict) and value.get("type") in ("function", "custom") and isinstance(value.get("name"), str) \
            and value["name"]:
        return ToolChoice("tool", value["name"])
    raise WireError('tool_choice: must be `auto`, `none`, `required` or {"type": "function", "name": ...}.',
                    param="tool_choice")


def _schema(text: Any, upstream: WireFormat) -> Mapping[str, Any] | None:
    """The JSON Schema ``text.format`` asks for; the neutral shapes carry no JSON mode
    without a schema."""
    if text is None:
        return None
    spec = text.get("format") if isinstance(text, dict) else None
    kind = spec.get("type") if isinstance(spec, dict) else None
    if spec is None or kind == "text":
        return None
    if kind == "json_schema" and isinstance(spec.get("schema"), dict):
        return spec["schema"]
    raise WireError(f"text.format: this key's agent runs {upstream.provider_words} model through the gateway, "
                    'which takes {"type": "json_schema", "schema": {...}} and no other format.',
                    param="text.format")
