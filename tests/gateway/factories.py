"""Plain-data builders for gateway tests (no database)."""

from __future__ import annotations

import hashlib

from observations.gateway import segments
from observations.gateway.budget import Budget
from observations.gateway.context import SegmentNeeded, SessionContext
from observations.gateway.messages import ToolCall, ToolSchema
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import FileRange, ObservationInput

TOOLS = (
    ToolSchema("read_file", "Read lines of a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSchema("shell", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}),
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def file_text(path: str, version: int, lines: int) -> str:
    return "".join(f"{path}:{n} v{version} = compute(value_{n}, other_{n})\n" for n in range(1, lines + 1))


def read_input(call_id: str, path: str, text: str, start: int | None = None, end: int | None = None) -> ObservationInput:
    digest = sha(text)
    return ObservationInput(
        call_id=call_id,
        tool="read_file",
        arguments={"path": path, "start": start, "end": end},
        text=text,
        sha256=digest,
        size=len(text.encode()),
        tokens=estimate_tokens(text),
        purpose=f"read {path}",
        read=FileRange(path, start, end, digest),
        file_fingerprint=digest,
    )


def shell_input(call_id: str, command: str, output: str) -> ObservationInput:
    return ObservationInput(
        call_id=call_id,
        tool="shell",
        arguments={"command": command},
        text=output,
        sha256=sha(output),
        size=len(output.encode()),
        tokens=estimate_tokens(output),
        purpose=f"run {command}",
    )


def make_context(*, window: int = 20_000, output_budget: int = 2_000, policy: str = "on_demand",
                 intent: str = "Objective: fix the bug.\nConstraints: don't touch vendor/.", **budget_kwargs) -> SessionContext:
    return SessionContext(
        model="test:model",
        system_prompt="You are a careful coding agent.",
        tools=TOOLS,
        budget=Budget(window=window, output_budget=output_budget, **budget_kwargs),
        policy=policy,
        intent_text=intent,
        intent_path=".atrium/tasks/1/intent.md",
    )


def new_segment(ctx: SessionContext, reason: str = "test", prose: dict[str, str] | None = None):
    """Start the next segment the way the runtime does when no model writes the prose."""
    handoff = segments.handoff_for(ctx, reason=reason, prose=prose or segments.records_prose(ctx),
                                   prose_source="records")
    return segments.start_segment(ctx, handoff)


def prepare(ctx: SessionContext):
    """The step boundary, with a new segment first when the gateway asks for one."""
    try:
        return ctx.prepare()
    except SegmentNeeded as need:
        new_segment(ctx, need.reason)
        return ctx.prepare()


def call(call_id: str, name: str = "read_file", **arguments) -> ToolCall:
    return ToolCall(call_id, name, arguments)
