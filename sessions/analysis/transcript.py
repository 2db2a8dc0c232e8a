"""A session as readable Markdown: people's messages, the agent's replies, its tool calls
with short results, folds, segments, nudges, verify lines and the merge, in the order
they happened (the session's event log)."""

from __future__ import annotations

import json
from typing import Any

from observations.gateway.prices import format_usd
from sessions.analysis.facts import Event, SessionFacts
from sessions.analysis.trace import analyze

RESULT_LINES = 6  # lines of a tool result shown
RESULT_CHARS = 400
ARGUMENT_CHARS = 200
NUDGES = {
    "unchecked": "files changed but nothing was run since: asked to run a check",
    "promise": "the reply announced more work: asked to do it or finish",
}


def render_transcript(facts: SessionFacts) -> str:
    analysis = analyze(facts)
    head = [
        f"# {facts.title}",
        "",
        f"Session {facts.session_id} · {facts.agent} (`{facts.model}`) · {facts.state} · "
        f"{analysis.steps} steps · {analysis.model_calls} model calls · {analysis.tool_calls} tool calls · "
        f"cost {format_usd(analysis.cost)}",
    ]
    if facts.started_at:
        head.append(f"Started {facts.started_at:%Y-%m-%d %H:%M:%S %Z}"
                    + (f", ended {facts.finished_at:%Y-%m-%d %H:%M:%S %Z}" if facts.finished_at else ""))
    body: list[str] = []
    calls: dict[str, dict[str, Any]] = {}
    for event in facts.events:
        body.extend(_event(event, facts, calls))
    return "\n".join(head + [""] + body).rstrip() + "\n"


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in text.splitlines() or [""]]


def _fence(text: str) -> list[str]:
    fence = "```"
    while fence in text:
        fence += "`"
    return [fence, text, fence]


def _short(text: str) -> str:
    lines = text.rstrip("\n").splitlines()
    cut = "\n".join(lines[:RESULT_LINES])
    if len(cut) > RESULT_CHARS:
        cut = cut[: RESULT_CHARS - 1] + "…"
    elif len(lines) > RESULT_LINES:
        cut += f"\n… ({len(lines) - RESULT_LINES} more lines)"
    return cut


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict) and set(arguments) == {"command"}:
        text = str(arguments["command"])
    elif isinstance(arguments, dict) and arguments:
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    elif arguments:
        text = json.dumps(arguments, ensure_ascii=False)
    else:
        text = ""
    return text if len(text) <= ARGUMENT_CHARS else text[: ARGUMENT_CHARS - 1] + "…"


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _event(event: Event, facts: SessionFacts, calls: dict[str, dict[str, Any]]) -> list[str]:
    p, kind = event.payload, event.kind
    if kind == "input.delivered":
        text = facts.people.get(p.get("message_id"), "(message not found)")
        who = {"steer": "steer", "agent": "an agent, in the room"}.get(p.get("kind"), "in the room")
        return [f"**{p.get('author') or 'someone'}** ({who}):", "", *_quote(text), ""]
    if kind == "model.reply":
        lines = [f"## Step {p.get('step')}", ""]
        if p.get("text"):
            lines += [str(p["text"]), ""]
        for call in p.get("tool_calls") or ():
            calls[str(call.get("id"))] = call
        return lines
    if kind == "tool.result":
        return _tool_result(p, calls.get(str(p.get("call_id")), {}))
    return _run_marker(kind, p)


def _tool_result(p: dict[str, Any], call: dict[str, Any]) -> list[str]:
    status = ""
    if p.get("is_error"):
        status = " (error)"
    elif p.get("job"):
        status = f" (continues as job {p['job']})"
    elif p.get("served") == "note":
        status = " (note: the same text is still in context)"
    arguments = _arguments(call.get("arguments", {}))
    lines = [f"- {_code(str(p.get('tool')))}{' ' + _code(arguments) if arguments else ''}{status}"]
    preview = _short(str(p.get("preview") or ""))
    fenced = "\n".join(_fence(preview)).splitlines()
    return lines + (["", *("  " + line for line in fenced), ""] if preview else [])


def _run_marker(kind: str, p: dict[str, Any]) -> list[str]:
    """What happened to the run between the model's steps: folds, segments, checks, merges."""
    if kind == "fold":
        evicted, revived = len(p.get("evicted") or ()), len(p.get("revived") or ())
        served = f"; {revived} re-read{'s' if revived != 1 else ''} served as text instead of a note" if revived else ""
        return [f"> **Fold #{p.get('number')}** at step {p.get('step')} ({p.get('reason')}): "
                f"{p.get('projection_before', 0):,} → {p.get('projection_after', 0):,} tokens, "
                f"{evicted} result{'s' if evicted != 1 else ''} receipted, {p.get('tokens_freed', 0):,} tokens freed"
                f"{served}", ""]
    if kind in ("segment.started", "handoff"):
        text = str(p.get("text") or p.get("handoff") or "")
        return [f"> **New segment** at step {p.get('step')}: the conversation continues from a handoff.",
                *(_quote(text) if text else []), ""]
    if kind == "verify":
        return [f"> **{p.get('line')}**", ""]
    if kind == "merge":
        return [f"> **{'Merged' if p.get('merged') else 'Not merged'}**: {p.get('detail')}", ""]
    if kind == "nudge":
        return [f"> **Nudge**: {NUDGES.get(str(p.get('kind')), p.get('kind'))}", ""]
    if kind == "loop.suspected":
        return [f"> **Loop suspected** ({p.get('kind')}): {p.get('subject')} ×{p.get('count')}. Nudge sent:",
                ">", *_quote(str(p.get("nudge") or "")), ""]
    if kind == "job.finished":
        code = p.get("exit_code")
        return [f"> job {p.get('handle')} {p.get('state')}" + (f", exit {code}" if code is not None else ""), ""]
    return _control_marker(kind, p)


def _control_marker(kind: str, p: dict[str, Any]) -> list[str]:
    """What people and the hub decided: approvals, intent changes, the session's state."""
    if kind == "approval.requested":
        return [f"> Approval requested for {_code(str(p.get('tool')))} {_code(_arguments(p.get('arguments')))}", ""]
    if kind == "approval.decided":
        by = f" by {p['by']}" if p.get("by") else ""
        return [f"> Approval {p.get('state')}{by}" + (" (always, for this session)" if p.get("always") else ""), ""]
    if kind in ("intent.changed", "intent.drift"):
        what = "changed by a person" if kind == "intent.changed" else "disagreed with the context; the file wins"
        return [f"> Intent {what} (step {p.get('step')})", ""]
    if kind == "session.state_changed":
        reason = f": {p['reason']}" if p.get("reason") else ""
        return [f"*Session {p.get('state')}{reason}*", ""]
    if kind == "model.overflow":
        return [f"> The provider refused the request as too long (projected {p.get('projection', 0):,}); "
                "a mandatory fold follows", ""]
    return []
