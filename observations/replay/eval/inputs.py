"""A recorded trajectory as the gateway takes it: its tool table, each tool event as an
observation, each step's output tokens."""

from __future__ import annotations

import json
from typing import Any

from observations.gateway.messages import ToolSchema
from observations.gateway.receipts import call_purpose, meaningful_first_line
from observations.gateway.tokens import (
    estimate_tokens,
)
from observations.gateway.transcript import FileRange, ObservationInput
from observations.replay.trajectory import FileAccess, Step, ToolEvent, text_sha256


def tool_schemas(meta: dict[str, Any]) -> tuple[ToolSchema, ...]:
    """The recorded tool schemas (OpenAI ``{"type": "function", "function": ...}`` or bare)."""
    schemas = []
    for item in meta.get("tools") or ():
        if not isinstance(item, dict):
            continue
        spec = item.get("function") if isinstance(item.get("function"), dict) else item
        parameters = spec.get("parameters")
        schemas.append(
            ToolSchema(
                str(spec.get("name", "")),
                str(spec.get("description", "")),
                parameters if isinstance(parameters, dict) else {},
            )
        )
    return tuple(schemas)


def observation_input(event: ToolEvent) -> ObservationInput:
    text = event.output
    reads = [a for a in event.accesses if a.kind == "read"]
    # The ledger keys one range per result; a result that printed several files is
    # served as plain output.
    read = _file_range(reads[0]) if len(reads) == 1 else None
    return ObservationInput(
        call_id=event.call_id,
        tool=event.tool,
        arguments=event.arguments,
        text=text,
        sha256=text_sha256(text),
        size=len(text.encode("utf-8", "surrogatepass")),
        tokens=estimate_tokens(text),
        purpose=reads[0].describe() if len(reads) == 1 else call_purpose(event.tool, event.arguments),
        read=read,
        file_fingerprint=read.content_hash if read else "",
        first_line=meaningful_first_line(text),
        exit_code=event.exit_code,
        written=tuple(dict.fromkeys(a.path for a in event.accesses if a.kind in ("write", "edit"))),
    )


def _file_range(access: FileAccess) -> FileRange:
    return FileRange(access.path, access.start, access.end, access.content_hash or "")


def native_call_tokens(step: Step) -> int:
    """Tokens of the tool calls the model made outside its text (native tool calls);
    calls written in the text are already counted with it."""
    return sum(
        estimate_tokens(json.dumps(event.arguments, ensure_ascii=False))
        for event in step.events
        if not event.call_in_text
    )


def output_tokens(step: Step) -> int:
    """Recorded output tokens, else the estimate of what the model wrote."""
    if step.reported_output_tokens is not None:
        return step.reported_output_tokens
    return estimate_tokens(step.assistant_text) + native_call_tokens(step)
