"""What one request is made of: bytes and estimated tokens per named part.

The fixed prefix (system prompt, tool schemas, intent) is paid on every request of a
session; the breakdown shows what it costs beside the conversation. Parts are named
by the transcript entry kinds they hold (``PART_OF_KIND``), so a new kind of pinned
entry (a segment's handoff) becomes its own part by adding one line there.

Token figures are raw estimates (observations.gateway.tokens) of what a provider
receives: each message as the context estimates it, each tool schema as the JSON sent.
They add up to the provider's count within the estimator's error. (The context's own
projection counts tool schemas in a shorter form; per-model calibration absorbs that,
so a fixed-prefix figure here may exceed its share of the projection.)
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

from observations.gateway.messages import Message, ToolSchema
from observations.gateway.tokens import estimate_tokens

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext

# Entry kind → part; every other kind is "conversation".
PART_OF_KIND = {
    "intent": "intent",
    "intent_update": "intent",
    "handoff": "handoff",
}
FIXED_PARTS = ("system", "tools", "intent", "handoff")


def _part(data: str, tokens: int) -> dict[str, int]:
    return {"bytes": len(data.encode("utf-8", "surrogatepass")), "tokens": tokens}


def tool_wire(tool: ToolSchema) -> str:
    """One tool's schema as a provider receives it (JSON)."""
    return json.dumps({"name": tool.name, "description": tool.description, "parameters": tool.parameters},
                      ensure_ascii=False, separators=(",", ":"))


def tool_part(tool: ToolSchema) -> dict[str, int]:
    wire = tool_wire(tool)
    return _part(wire, estimate_tokens(wire))


def _message_text(message: Message) -> str:
    calls = "".join(call.name + json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                    for call in message.tool_calls)
    return message.text + calls


def request_breakdown(ctx: SessionContext) -> dict[str, Any]:
    """The request ``ctx`` would send now, by part.

    ``{"system": {bytes, tokens}, "tools": {bytes, tokens, "each": {name: {bytes,
    tokens}}}, "intent": {…}, "conversation": {…}}``, plus "handoff" once a session
    has one. Parts without content are left out, except system, tools and
    conversation.
    """
    tools = {tool.name: tool_part(tool) for tool in ctx.tools}
    parts: dict[str, Any] = {
        "system": _part(ctx.system_prompt, estimate_tokens(ctx.system_prompt)),
        "tools": {
            "bytes": sum(t["bytes"] for t in tools.values()),
            "tokens": sum(t["tokens"] for t in tools.values()),
            "each": tools,
        },
        "conversation": {"bytes": 0, "tokens": 0},
    }
    sizes = _message_bytes(ctx)
    for entry, size, tokens in zip(ctx.entries, sizes, ctx.transcript.tokens, strict=True):
        name = PART_OF_KIND.get(entry.kind, "conversation")
        part = parts.setdefault(name, {"bytes": 0, "tokens": 0})
        part["bytes"] += size
        part["tokens"] += tokens
    return parts


# Per context, the byte size of each rendered message, kept while the message object is
# the same one (only a fold re-renders), so a breakdown per request costs O(messages)
# identity checks instead of encoding the whole conversation again.
_SIZES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _message_bytes(ctx: SessionContext) -> list[int]:
    cached: list[tuple[Message, int]] = _SIZES.setdefault(ctx, [])
    messages = tuple(ctx.transcript.messages)
    del cached[len(messages):]
    for index, message in enumerate(messages):
        if index < len(cached) and cached[index][0] is message:
            continue
        size = len(_message_text(message).encode("utf-8", "surrogatepass"))
        if index < len(cached):
            cached[index] = (message, size)
        else:
            cached.append((message, size))
    return [size for _, size in cached]


def breakdown_total(parts: dict[str, Any], key: str = "tokens") -> int:
    return sum(int(part.get(key, 0)) for part in parts.values())
