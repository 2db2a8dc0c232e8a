"""Anthropic's Messages (``POST /v1/messages``), as the endpoint speaks it."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import anthropic

from agents.providers.output_limits import reasons
from agents.providers.toolcalls import parse_arguments
from endpoint.formats.base import (
    ParamRules,
    TurnEvents,
    WireFormat,
    never,
    new_id,
    number,
    string,
    strings,
)
from endpoint.formats.events import MessageEvents
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

# "system" inside ``messages``: Claude Code's (the mid-conversation-system beta).
ROLES = frozenset({"user", "assistant", "system"})
EFFORTS = ("low", "medium", "high", "xhigh", "max")
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
THINKING_KEYS = ("type", "thinking", "signature", "data")  # what a thinking block carries back
_STOP = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens", "refusal": "refusal"}
_CHOICES = {"auto": "auto", "none": "none", "any": "required", "tool": "tool"}

RULES = ParamRules(
    handled=frozenset({"model", "messages", "system", "tools", "max_tokens", "stream"}),
    translated=frozenset({"temperature", "top_p", "stop_sequences", "tool_choice", "metadata"}),
    unserved={
        "mcp_servers": (never, "the gateway does not return a server tool's blocks"),
        "container": (never, "the gateway does not return a server tool's blocks"),
    },
    untranslatable={"top_k": never},
    # Its cache breakpoints (``agents.providers.anthropic_messages``), a diagnosis
    # against a message id of the upstream's, which the client never saw, and what is
    # kept of the context (the gateway folds it itself).
    gateways_own=frozenset({"cache_control", "diagnostics", "context_management"}),
    # Thinking goes to an Anthropic upstream as it is (its blocks carried back with their
    # signatures); to an OpenAI reasoning model it is the effort.
    converted=frozenset({"output_config", "thinking"}),
    temperature_max=1.0,
)


CLAUDE_CODE_SESSION_HEADER = "X-Claude-Code-Session-Id"
BETA_HEADER = "anthropic-beta"
# Betas of what the gateway leaves out of the request it makes (RULES.gateways_own, and a
# system message inside ``messages``, which it turns into a user's text).
LEFT_OUT_BETAS = ("thinking-token-count", "context-management", "mid-conversation-system")
# A thinking budget as an OpenAI reasoning effort: the least effort whose budget it is under.
EFFORT_BUDGETS = ((4_096, "low"), (16_384, "medium"))
_LEGACY_SESSION = re.compile(r"_session_([A-Za-z0-9-]+)$")


class AnthropicMessages(WireFormat):
    name = "anthropic"
    provider_words = "an Anthropic"
    rules = RULES
    forwarded_headers = (BETA_HEADER,)
    bearer_first = False
    claiming_headers = ("x-api-key", "anthropic-version")
    efforts = EFFORTS
    sdk = anthropic

    # --- the request -------------------------------------------------------------------
    def forwarded(self, headers: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        betas = [beta.strip() for beta in headers.get(BETA_HEADER, "").split(",") if beta.strip()]
        kept = [beta for beta in betas if not beta.startswith(LEFT_OUT_BETAS)]
        # Named by the feature, not as the client wrote it: a response header takes no such text.
        named = tuple(f"{BETA_HEADER}.{feature}" for feature in LEFT_OUT_BETAS
                      if any(beta.startswith(feature) for beta in betas))
        return ({BETA_HEADER: ",".join(kept)} if kept else {}), named

    def check(self, body: Mapping[str, Any]) -> None:
        check_type(body, "model", str, required=True)
        if "max_tokens" not in body:
            raise WireError("max_tokens: Field required", param="max_tokens")
        check_positive_int(body, "max_tokens")
        messages = check_type(body, "messages", list, required=True)
        for i, message in enumerate(messages):
            _check_message(i, message)
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            raise WireError("system: must be a string or a list of text blocks", param="system")
        tools = check_type(body, "tools", list)
        for i, tool in enumerate(tools or ()):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
                raise WireError(f"tools.{i}.name: Field required", param=f"tools.{i}.name")
            if "type" not in tool and not isinstance(tool.get("input_schema"), dict):
                raise WireError(f"tools.{i}.input_schema: Field required", param=f"tools.{i}.input_schema")
            if not isinstance(tool.get("description", ""), str):
                raise WireError(f"tools.{i}.description: must be a string", param=f"tools.{i}.description")
        check_type(body, "stream", bool)
        for field in ("temperature", "top_p"):
            check_number(body, field)

    def request(self, body: dict[str, Any], model: str, params: Params = NO_PARAMS) -> Request:
        messages = _messages(body["messages"])
        system = body.get("system") or ""
        if isinstance(system, list):
            system = _text(system, "system")
        tools = []
        for i, tool in enumerate(body.get("tools") or ()):
            if "input_schema" not in tool:
                raise WireError(f"tools.{i}: the server tool `{tool.get('type')}` cannot be translated",
                                param=f"tools.{i}")
            tools.append(ToolSchema(tool["name"], tool.get("description") or "", tool["input_schema"]))
        return Request(model=model, system=system, tools=tuple(tools), messages=tuple(messages),
                       max_tokens=body["max_tokens"], params=params)

    def params(self, body: Mapping[str, Any]) -> Params:
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise WireError("metadata: must be an object.", param="metadata")
        choice, parallel = _tool_choice(body.get("tool_choice"))
        return Params(
            temperature=number(body, "temperature"),
            top_p=number(body, "top_p"),
            stop=strings(body.get("stop_sequences"), "stop_sequences", "an array of strings"),
            tool_choice=choice,
            parallel_tool_calls=parallel,
            user=string((metadata or {}).get("user_id"), "metadata.user_id"),
        )

    def conversation_id(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
        """Claude Code's session id: its header (2.1.86 on), else ``metadata.user_id``,
        a JSON object's ``session_id`` (2.1.78 on) or ``user_…_session_<id>`` before."""
        if header := headers.get(CLAUDE_CODE_SESSION_HEADER):
            return header
        user_id = (body.get("metadata") or {}).get("user_id")
        if not isinstance(user_id, str):
            return None
        try:
            parsed = json.loads(user_id)
        except ValueError:
            legacy = _LEGACY_SESSION.search(user_id)
            return legacy.group(1) if legacy else None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) and session else None

    def converted(self, params: Params, body: Mapping[str, Any], upstream: WireFormat, model: str) -> Params:
        if reasons(model) and (effort := _thinking_effort(body.get("thinking"))) is not None:
            params = dataclasses.replace(params, effort=effort)  # an output_config.effort overrides it
        config = body.get("output_config")
        if config is None:
            return params
        if not isinstance(config, dict):
            raise WireError("output_config: must be an object.", param="output_config")
        if unknown := sorted(config.keys() - {"format", "effort"}):
            raise WireError(
                f"output_config.{unknown[0]}: this key's agent runs {upstream.provider_words} model, which has no "
                "such setting; leave it out.",
                param=f"output_config.{unknown[0]}",
            )
        output = config.get("format")
        if output is not None and (not isinstance(output, dict) or output.get("type") != "json_schema"
                                   or not isinstance(output.get("schema"), dict)):
            raise WireError('output_config.format: must be {"type": "json_schema", "schema": {...}}.',
                            param="output_config.format")
        effort = config.get("effort")
        if effort is not None and not isinstance(effort, str):
            raise WireError("output_config.effort: must be a string.", param="output_config.effort")
        return dataclasses.replace(params, json_schema=output["schema"] if output else None,
                                   effort=effort or params.effort)

    def dropped(self, body: Mapping[str, Any], upstream: WireFormat, model: str) -> tuple[str, ...]:
        system = body.get("system")
        blocks = [b for m in body["messages"] if isinstance(m.get("content"), list) for b in m["content"]]
        blocks += [inner for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"
                   and isinstance(b.get("content"), list) for inner in b["content"]]
        marked = {"system": system if isinstance(system, list) else [], "tools": body.get("tools") or [],
                  "messages": blocks}
        out = [f"{where}.cache_control" for where, items in marked.items()
               if any(isinstance(item, dict) and "cache_control" in item for item in items)]
        if upstream is not self:  # an OpenAI upstream: no thinking blocks, a thinking only as a reasoning effort
            if any(b.get("type") in THINKING_BLOCKS for b in blocks if isinstance(b, dict)):
                out.append("messages.thinking")
            if _thinking_effort(body.get("thinking")) is not None and not reasons(model):
                out.append("thinking")
        return tuple(out)

    def tool_names(self, tools: list[dict[str, Any]]) -> set[str | None]:
        return {t.get("name") for t in tools}

    # --- the answer --------------------------------------------------------------------
    def response(self, turn: ModelTurn, model: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        content: list[dict[str, Any]] = [json.loads(block) for block in turn.thinking]
        content += [{"type": "text", "text": turn.text}] if turn.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.tool_calls]
        return {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": turn.model or model,
                "content": content, "stop_reason": _stop_reason(turn), "stop_sequence": _stop_sequence(turn),
                "usage": _usage(turn)}

    def events(self, model: str, body: Mapping[str, Any]) -> TurnEvents:
        return MessageEvents(model, lambda turn: self.response(turn, model))

    def error_body(self, error: WireError) -> dict[str, Any]:
        return {"type": "error", "error": {"type": error.kind, "message": error.message}}

    def sse_error(self, error: WireError) -> bytes:
        return f"event: error\ndata: {json.dumps(self.error_body(error))}\n\n".encode()

    def models(self, model: str, *, created: int) -> dict[str, Any]:
        created_at = datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"data": [{"type": "model", "id": model, "display_name": model, "created_at": created_at}],
                "has_more": False, "first_id": model, "last_id": model}

    def rebuilt_error(self, fields: dict[str, str]) -> dict[str, Any]:
        return {"type": "error", "error": fields}

    # --- the pass-through --------------------------------------------------------------
    def async_client_class(self) -> Any:
        return anthropic.AsyncAnthropic

    def relay_call(self, client: Any, *, model: str, body: dict[str, Any], extra_headers: dict[str, str],
                   timeout: float) -> Any:
        # The SDK takes max_tokens as an argument; the rest goes as the client wrote it, past
        # the SDK's rewriting (agents.providers.sdk_body), the history left empty in its place.
        rest = {k: v for k, v in body.items() if k not in ("model", "max_tokens")}
        return client.messages.with_streaming_response.create(
            model=model, messages=[], max_tokens=body["max_tokens"], extra_body=rest,
            extra_headers=extra_headers, timeout=timeout)

    def answer_shaped(self, answer: dict[str, Any]) -> bool:
        return answer.get("type") == "message" and isinstance(answer.get("content"), list)


ANTHROPIC_MESSAGES = AnthropicMessages()


def _check_message(i: int, message: Any) -> None:
    where = f"messages.{i}"
    if not isinstance(message, dict):
        raise WireError(f"{where}: must be an object", param=where)
    if message.get("role") not in ROLES:
        raise WireError(f"{where}.role: must be `user`, `assistant` or `system`", param=f"{where}.role")
    content = message.get("content")
    if isinstance(content, list):
        for j, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
                raise WireError(f"{where}.content.{j}.input: a tool_use block's input must be an object",
                                param=f"{where}.content.{j}.input")
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise WireError(f"{where}.content.{j}: a content block needs a `type`",
                                param=f"{where}.content.{j}")
    elif not isinstance(content, str):
        raise WireError(f"{where}.content: must be a string or a list of content blocks",
                        param=f"{where}.content")


def _messages(wires: list[dict[str, Any]]) -> list[Message]:
    messages: list[Message] = []
    names: dict[str, str] = {}  # tool names by call id
    held: list[Message] = []  # a system message, until the tool results it came among
    for i, wire in enumerate(wires):
        if wire["role"] == "system":
            if text := _text(wire["content"], f"messages.{i}.content").strip():
                held.append(Message("user", _as_reminder(text)))
            continue
        results, texts, calls, thinking = _blocks(wire, f"messages.{i}", names)
        messages += results
        if held and not (messages and messages[-1].tool_calls):
            messages += held
            held.clear()
        if texts or calls:
            messages.append(Message(wire["role"], "\n\n".join(texts), tool_calls=tuple(calls),
                                    thinking=tuple(thinking)))
    return messages + held


def _blocks(wire: dict[str, Any], where: str,
            names: dict[str, str]) -> tuple[list[Message], list[str], list[ToolCall], list[str]]:
    """One wire message's tool results (as tool messages), texts, tool calls and
    thinking blocks (each as the JSON of the block the client gave back)."""
    content = wire["content"]
    results: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[str] = []
    for j, block in enumerate([{"type": "text", "text": content}] if isinstance(content, str) else content):
        kind = block["type"]
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and wire["role"] == "assistant":
            calls.append(ToolCall(str(block.get("id")), str(block.get("name")), parse_arguments(block.get("input"))))
            names[calls[-1].id] = calls[-1].name
        elif kind in THINKING_BLOCKS and wire["role"] == "assistant":
            thinking.append(json.dumps({k: block[k] for k in THINKING_KEYS if k in block}, ensure_ascii=False))
        elif kind == "tool_result" and wire["role"] == "user":
            call_id = str(block.get("tool_use_id"))
            text = _text(block.get("content"), f"{where}.content.{j}.content")
            if block.get("is_error"):
                text = f"Error: {text}"
            results.append(Message("tool", text, tool_call_id=call_id, tool_name=names.get(call_id)))
        else:
            raise WireError(f"{where}.content.{j}: a `{kind}` block cannot be translated to this key's agent",
                            param=f"{where}.content.{j}")
    return results, texts, calls, thinking


def _as_reminder(text: str) -> str:
    """A system message from inside ``messages``, as a user's text any upstream takes
    where it stood (Claude Code marks its own harness notes this way in user turns)."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def _text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, block in enumerate(content if isinstance(content, list) else [content]):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise WireError(f"{where}.{j}: only text blocks translate to this key's agent", param=f"{where}.{j}")
        texts.append(block["text"])
    return "\n".join(texts)


def _tool_choice(value: Any) -> tuple[ToolChoice | None, bool | None]:
    if value is None:
        return None, None
    kind = value.get("type") if isinstance(value, dict) else None
    if not isinstance(kind, str) or kind not in _CHOICES:
        raise WireError("tool_choice.type: must be `auto`, `any`, `tool` or `none`.", param="tool_choice.type")
    name = value.get("name")
    if kind == "tool" and (not isinstance(name, str) or not name):
        raise WireError("tool_choice.name: Field required", param="tool_choice.name")
    disable = value.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise WireError("tool_choice.disable_parallel_tool_use: must be a boolean.",
                        param="tool_choice.disable_parallel_tool_use")
    return ToolChoice(_CHOICES[kind], name if kind == "tool" else ""), (False if disable else None)


def _thinking_effort(thinking: Any) -> str | None:
    """A client's ``thinking`` as a reasoning effort: by its budget, "medium" when
    adaptive; None when off (or not an object: the upstream checks that)."""
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    budget = thinking.get("budget_tokens")
    if thinking["type"] == "adaptive" or not isinstance(budget, int):
        return "medium"
    return next((effort for ceiling, effort in EFFORT_BUDGETS if budget < ceiling), "high")


def _stop_reason(turn: ModelTurn) -> str:
    if turn.tool_calls:
        return "tool_use"
    return "stop_sequence" if _stop_sequence(turn) is not None else _STOP.get(turn.stop_reason, "end_turn")


def _stop_sequence(turn: ModelTurn) -> str | None:
    return turn.stop_sequence if not turn.tool_calls and turn.stop_reason == "end_turn" else None


def _usage(turn: ModelTurn) -> dict[str, Any]:
    usage = turn.usage
    # Anthropic's input_tokens is the uncached part; the neutral count includes the cache.
    uncached = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
    return {"input_tokens": uncached, "cache_read_input_tokens": usage.cached_input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens, "output_tokens": usage.output_tokens}
