"""Between a client's wire format and the gateway's neutral shapes
(``observations.gateway.messages``): a client's request as a ``Request``, a ``ModelTurn``
as the client's response, whole or as the events of a stream.

It lets a key's agent answer a client of the other provider's format: the request goes
upstream through the profile's own provider (``agents.providers``, as Atrium's sessions
call it) and the turn comes back in the client's format; a streaming client gets the
turn as the event sequence its SDK parses, once the turn is complete. The same parse is
what the gateway will need to take a stateless client's history into a session.

Only what the neutral shapes hold translates: text, tool calls and tool results.
Images, documents, audio and thinking blocks are refused with a 400 naming the part
(passed through, they would be dropped silently). Plain Python, no Django.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Any

from agents.endpoint.wire import Format, WireError
from agents.providers.toolcalls import arguments_text, parse_arguments
from observations.gateway.messages import (
    NO_PARAMS,
    Message,
    ModelTurn,
    Params,
    Request,
    ToolCall,
    ToolSchema,
)

_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}
_STOP = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens", "refusal": "refusal"}


# --- requests ---------------------------------------------------------------------------


def request_from(fmt: Format, body: dict[str, Any], *, model: str, params: Params = NO_PARAMS) -> Request:
    """The client's (checked) request body as a neutral Request for ``model``, with the
    settings ``agents.endpoint.params`` decided for it."""
    request = _from_openai(body, model) if fmt == "openai" else _from_anthropic(body, model)
    return dataclasses.replace(request, params=params)


def _from_openai(body: dict[str, Any], model: str) -> Request:
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for i, wire in enumerate(body["messages"]):
        role, where = wire["role"], f"messages[{i}]"
        text = _openai_text(wire.get("content"), where)
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
    return Request(model=model, system="\n\n".join(system), tools=tools, messages=tuple(messages), max_tokens=limit)


def _openai_text(content: Any, where: str) -> str:
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


def _from_anthropic(body: dict[str, Any], model: str) -> Request:
    messages: list[Message] = []
    names: dict[str, str] = {}
    for i, wire in enumerate(body["messages"]):
        where = f"messages.{i}"
        content = wire["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts: list[str] = []
        calls: list[ToolCall] = []
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use" and wire["role"] == "assistant":
                calls.append(ToolCall(str(block.get("id")), str(block.get("name")),
                                      parse_arguments(block.get("input"))))
                names[calls[-1].id] = calls[-1].name
            elif kind == "tool_result" and wire["role"] == "user":
                call_id = str(block.get("tool_use_id"))
                text = _anthropic_text(block.get("content"), f"{where}.content.{j}.content")
                if block.get("is_error"):
                    text = f"Error: {text}"
                messages.append(Message("tool", text, tool_call_id=call_id, tool_name=names.get(call_id)))
            else:
                raise WireError(f"{where}.content.{j}: a `{kind}` block cannot be translated to this key's agent",
                                param=f"{where}.content.{j}")
        if texts or calls:
            messages.append(Message(wire["role"], "".join(texts), tool_calls=tuple(calls)))
    system = body.get("system") or ""
    if isinstance(system, list):
        system = _anthropic_text(system, "system")
    tools = []
    for i, tool in enumerate(body.get("tools") or ()):
        if "input_schema" not in tool:
            raise WireError(f"tools.{i}: the server tool `{tool.get('type')}` cannot be translated",
                            param=f"tools.{i}")
        tools.append(ToolSchema(tool["name"], tool.get("description") or "", tool["input_schema"]))
    return Request(model=model, system=system, tools=tuple(tools), messages=tuple(messages),
                   max_tokens=body["max_tokens"])


def _anthropic_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, block in enumerate(content if isinstance(content, list) else [content]):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise WireError(f"{where}.{j}: only text blocks translate to this key's agent", param=f"{where}.{j}")
        texts.append(block["text"])
    return "\n".join(texts)


# --- responses --------------------------------------------------------------------------


def response_body(fmt: Format, turn: ModelTurn, *, model: str) -> dict[str, Any]:
    """``turn`` as the client's SDK reads a whole response."""
    return _openai_completion(turn, model) if fmt == "openai" else _anthropic_message(turn, model)


def _openai_completion(turn: ModelTurn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": arguments_text(c.arguments)}}
                                 for c in turn.tool_calls]
    return {"id": _id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": turn.model or model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(turn), "logprobs": None}],
            "usage": _openai_usage(turn)}


def _finish(turn: ModelTurn) -> str:
    return "tool_calls" if turn.tool_calls else _FINISH.get(turn.stop_reason, "stop")


def _openai_usage(turn: ModelTurn) -> dict[str, Any]:
    usage = turn.usage
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens}}


def _anthropic_message(turn: ModelTurn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.tool_calls]
    return {"id": _id("msg_"), "type": "message", "role": "assistant", "model": turn.model or model,
            "content": content, "stop_reason": _stop_reason(turn), "stop_sequence": _stop_sequence(turn),
            "usage": _anthropic_usage(turn)}


def _stop_reason(turn: ModelTurn) -> str:
    if turn.tool_calls:
        return "tool_use"
    return "stop_sequence" if _stop_sequence(turn) is not None else _STOP.get(turn.stop_reason, "end_turn")


def _stop_sequence(turn: ModelTurn) -> str | None:
    return turn.stop_sequence if not turn.tool_calls and turn.stop_reason == "end_turn" else None


def _anthropic_usage(turn: ModelTurn) -> dict[str, Any]:
    usage = turn.usage
    # Anthropic's input_tokens is the uncached part; the neutral count includes the cache.
    uncached = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
    return {"input_tokens": uncached, "cache_read_input_tokens": usage.cached_input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens, "output_tokens": usage.output_tokens}


def stream_events(fmt: Format, turn: ModelTurn, *, model: str) -> list[bytes]:
    """``turn`` as the events of a stream, in the order and shapes the client's SDK
    parses (OpenAI: chunks, then ``[DONE]``; Anthropic: message_start … message_stop)."""
    return _openai_chunks(turn, model) if fmt == "openai" else _anthropic_events(turn, model)


def _openai_chunks(turn: ModelTurn, model: str) -> list[bytes]:
    whole = _openai_completion(turn, model)
    head = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": whole["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": turn.text or ""})]
    for index, call in enumerate(whole["choices"][0]["message"].get("tool_calls", ())):
        out.append(chunk({"tool_calls": [{"index": index, **call}]}))
    out.append(chunk({}, whole["choices"][0]["finish_reason"]))
    out.append(_data({**head, "choices": [], "usage": whole["usage"]}))
    out.append(b"data: [DONE]\n\n")
    return out


def _anthropic_events(turn: ModelTurn, model: str) -> list[bytes]:
    whole = _anthropic_message(turn, model)
    usage = whole["usage"]
    start = {**whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    out = [_event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}
        out.append(_event("content_block_start", {"type": "content_block_start", "index": index,
                                                  "content_block": first}))
        out.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(_event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": whole["stop_reason"],
                                                  "stop_sequence": whole["stop_sequence"]},
                                        "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]
