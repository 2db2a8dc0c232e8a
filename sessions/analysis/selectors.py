"""A session's facts (sessions.analysis.facts) read from the database: its event log,
provider calls, observations and folds. The only module of sessions.analysis that
touches Django."""

from __future__ import annotations

from rooms.models import Message
from sessions.analysis.commands import job_exit_codes, shell_exit_code
from sessions.analysis.facts import (
    Budgets,
    CallFact,
    Event,
    FoldFact,
    SegmentFact,
    SessionFacts,
    ToolFact,
)
from sessions.models import Fold, Observation, ProviderCall, Session, SessionEvent
from sessions.runtime.write_watch import FILE_CHANGED

# Event kinds that open a new segment of the conversation (sessions that run long
# enough to outgrow folds); payload: step, tokens_freed.
SEGMENT_KINDS = frozenset({"segment.started"})


def session_facts(session: Session) -> SessionFacts:
    events = tuple(
        Event(e.seq, e.kind, e.payload if isinstance(e.payload, dict) else {}, e.created_at)
        for e in SessionEvent.objects.filter(session=session).order_by("seq")
    )
    calls = tuple(
        CallFact(step=c.step, model=c.model, input_tokens=c.input_tokens, cached_input_tokens=c.cached_input_tokens,
                 cache_write_tokens=c.cache_write_tokens, output_tokens=c.output_tokens,
                 reasoning_tokens=c.reasoning_tokens, projected_tokens=c.projected_tokens, cost=c.cost_usd,
                 latency_ms=c.latency_ms, error=c.error, prefix=c.prefix or {})
        for c in ProviderCall.objects.filter(session=session).order_by("id")
    )
    folds = tuple(
        FoldFact(number=f.number, step=f.step, tokens_freed=f.tokens_freed, evicted=len(f.evicted or ()),
                 projection_before=f.projection_before, projection_after=f.projection_after, reason=f.reason)
        for f in Fold.objects.filter(session=session).order_by("number")
    )
    segments = [SegmentFact(1, 0)] if events else []
    for event in events:
        if event.kind in SEGMENT_KINDS:
            segments.append(SegmentFact(len(segments) + 1, int(event.payload.get("step") or 0),
                                        int(event.payload.get("tokens_freed") or 0)))
    task = session.task
    message_ids = [e.payload.get("message_id") for e in events if e.kind == "input.delivered"]
    people = dict(Message.objects.filter(pk__in=[m for m in message_ids if isinstance(m, int)])
                  .values_list("pk", "text"))
    return SessionFacts(
        session_id=session.pk, title=task.title, agent=session.agent.name, model=session.agent.model,
        state=session.state, check_command=task.room.check_command, steps=session.step,
        started_at=session.started_at, finished_at=session.finished_at, tools=_tool_facts(session, events),
        calls=calls, folds=folds, segments=tuple(segments), events=events, budgets=_budgets(events),
        people=people,
    )


def _tool_facts(session: Session, events: tuple[Event, ...]) -> tuple[ToolFact, ...]:
    arguments: dict[str, dict] = {}
    exits: dict[str, int] = {}
    wrote: dict[str, list[str]] = {}
    for event in events:
        if event.kind == FILE_CHANGED:
            p = event.payload
            wrote.setdefault(str(p.get("call_id")), []).extend(
                str(path) for path in (p.get("path"), p.get("old_path")) if path)
        elif event.kind == "model.reply":
            for call in event.payload.get("tool_calls") or ():
                arguments[str(call.get("id"))] = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
        elif event.kind == "job.finished" and isinstance(event.payload.get("exit_code"), int):
            exits[str(event.payload.get("handle"))] = event.payload["exit_code"]
        elif event.kind == "tool.result" and event.payload.get("tool") == "await":
            exits.update(job_exit_codes(str(event.payload.get("preview") or "")))
    reads = {
        o.call_id: (o.path, o.line_start, o.line_end, o.content_hash)
        for o in Observation.objects.filter(session=session, tool="read_file").exclude(content_hash="")
        .only("call_id", "path", "line_start", "line_end", "content_hash")
    }
    facts = []
    for event in events:
        if event.kind != "tool.result":
            continue
        p = event.payload
        call_id, tool, preview = str(p.get("call_id")), str(p.get("tool")), str(p.get("preview") or "")
        job = p.get("job") or None
        code = None
        if tool == "shell":
            code = exits.get(job) if job else shell_exit_code(preview)
        facts.append(ToolFact(
            step=int(p.get("step") or 0), call_id=call_id, tool=tool, arguments=arguments.get(call_id, {}),
            is_error=bool(p.get("is_error")), read=reads.get(call_id), exit_code=code, job=job,
            duration_ms=int(p.get("duration_ms") or 0), served=str(p.get("served") or "text"),
            tokens=int(p.get("tokens") or 0), preview=preview, wrote=tuple(dict.fromkeys(wrote.get(call_id, ()))),
        ))
    return tuple(facts)


def _budgets(events: tuple[Event, ...]) -> Budgets:
    for event in reversed(events):
        if event.kind == "step.started":
            p = event.payload
            return Budgets(trigger=int(p.get("trigger") or 0), ceiling=int(p.get("ceiling") or 0),
                           window=int(p.get("window") or 0))
    return Budgets()
