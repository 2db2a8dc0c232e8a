"""Tool-call arguments as the model wrote them, made safe for the neutral shape."""

from __future__ import annotations

import json
from typing import Any

# ToolCall.arguments must be a dict, but models sometimes write invalid JSON or a
# non-object. The raw text is kept under this key so the tool dispatcher can answer
# the model with a clear error instead of running the tool with guessed arguments.
MALFORMED_ARGUMENTS_KEY = "__malformed_arguments__"


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
