"""Tool-call arguments as the model wrote them, made safe for the neutral shape."""

from __future__ import annotations

import json
from typing import Any

from observations.gateway.messages import MALFORMED_ARGUMENTS_KEY, ToolCall

__all__ = ["MALFORMED_ARGUMENTS_KEY", "arguments_are_malformed", "arguments_text", "call_arguments_text", "canonical",
           "parse_arguments"]


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {MALFORMED_ARGUMENTS_KEY: raw}
    if not isinstance(parsed, dict):
        return {MALFORMED_ARGUMENTS_KEY: raw}
    return parsed


def arguments_are_malformed(arguments: dict[str, Any]) -> bool:
    return MALFORMED_ARGUMENTS_KEY in arguments


def canonical(value: Any) -> Any:
    """``value`` with every object's keys sorted, at any depth; lists keep their order.

    Sessions are stored in PostgreSQL jsonb, which reorders object keys: a resumed turn's
    arguments come back in another order. Sent canonically, the same turn is the same
    bytes on the wire before and after a resume, so the provider's cached prefix holds.
    """
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    return value


def arguments_text(arguments: dict[str, Any]) -> str:
    """The JSON string form of ``arguments`` (OpenAI's ``function.arguments``), canonical.

    Malformed arguments go back exactly as the model wrote them.
    """
    raw = arguments.get(MALFORMED_ARGUMENTS_KEY)
    if isinstance(raw, str) and len(arguments) == 1:
        return raw
    return _ARGUMENTS.encode(arguments)


def call_arguments_text(call: ToolCall) -> str:
    """``arguments_text`` of the call's arguments, written once per call."""
    if call._arguments_text is None:
        object.__setattr__(call, "_arguments_text", arguments_text(call.arguments))
    return call._arguments_text


# json.dumps(arguments, sort_keys=True, ensure_ascii=False), its encoder made once: a long
# session's request renders every call's arguments again.
_ARGUMENTS = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
