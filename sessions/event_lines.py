"""How a session event reads in the session page's log: one HTML line per event.

The page renders its log with ``log_line`` and the session websocket sends the same
HTML in every frame (``log_frame``), so a replayed, a live and a reloaded event look
alike. Rendering reads only the event's payload, never the database.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string

from sessions.events import event_frame
from sessions.models import SessionEvent

ARGUMENT_PREVIEW = 160  # characters of a tool call's arguments shown inline

# Kinds after which the page reloads its status region (header, gauge, approvals, loop
# badge) and its insights (analysis, charts).
STATUS_KINDS = frozenset({
    "session.state_changed", "step.started", "model.reply", "approval.requested", "approval.decided", "merge",
    "merge.handed_back", "segment.started", "segment.requested", "input.delivered",
    "fold", "loop.suspected", "verify", "review.requested", "review.decided", "review.returned",
})


def log_frame(event: SessionEvent) -> dict[str, Any]:
    return with_html(event_frame(event))


def with_html(frame: dict[str, Any]) -> dict[str, Any]:
    """``frame`` (sessions.events.event_frame) plus its log line and whether the status changed."""
    return {**frame, "html": log_line(frame), "refresh": frame["kind"] in STATUS_KINDS}


def plumbing(kind: str, payload: dict[str, Any]) -> bool:
    """A row about the hub's own hand-offs (a worker taking the session's turn, the
    session queued or running again) rather than what the agent or a person did: the
    page folds these away unless asked."""
    return kind == "session.claimed" or (kind == "session.state_changed" and payload.get("state") in PLUMBING_STATES)


PLUMBING_STATES = frozenset({"queued", "running"})


def log_line(frame: dict[str, Any]) -> str:
    payload = frame.get("payload") or {}
    context = {
        "seq": frame["seq"],
        "kind": frame["kind"],
        "plumbing": plumbing(frame["kind"], payload),
        "p": payload,
        "at": _time_of_day(frame.get("at")),
        "calls": [_call_summary(c) for c in payload.get("tool_calls") or ()] if frame["kind"] == "model.reply" else (),
        "arguments": _arguments(payload.get("arguments")) if frame["kind"] == "approval.requested" else "",
        "raw": json.dumps(payload, ensure_ascii=False, sort_keys=True)[:2000],
    }
    return render_to_string("sessions/_event.html", context)


def _time_of_day(at: str | None) -> str:
    if not at:
        return ""
    try:
        return datetime.fromisoformat(at).strftime("%H:%M:%S")
    except ValueError:
        return ""


def _call_summary(call: dict[str, Any]) -> dict[str, str]:
    return {"name": str(call.get("name", "?")), "arguments": _arguments(call.get("arguments"))}


def _arguments(arguments: Any) -> str:
    """Arguments in one short line: ``path=textstats.py`` or the shell command itself."""
    if isinstance(arguments, dict):
        if set(arguments) == {"command"} and isinstance(arguments["command"], str):
            text = arguments["command"]
        else:
            text = " ".join(f"{k}={_value(v)}" for k, v in arguments.items())
    else:
        text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= ARGUMENT_PREVIEW else text[: ARGUMENT_PREVIEW - 1] + "…"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value if value and not any(c.isspace() for c in value) else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)
