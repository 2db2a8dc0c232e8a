"""The step loop, one unit of work at a time, over plain data.

A unit is either a step boundary (settle finished jobs, read people's messages,
re-read the intent file, let the gateway project and fold, send the request) or the
settling of one tool call. After every unit the caller commits the state, so a worker
that dies loses at most the unit in flight. Nothing here touches the database: the
`Host` does (sessions/runtime/ports.py; sessions/worker/host.py implements it), which keeps
this testable in memory. The end of a turn (check, review, merge) is turn_end.py's.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace
from typing import Any

from agents.providers import CallRecord, Completion, ProviderError
from agents.providers.storable import storable_turn
from agents.tools import registry
from agents.tools.outcome import ToolOutcome
from observations.gateway.breakdown import request_breakdown
from observations.gateway.context import Boundary, ContextTooLarge, SessionContext
from observations.gateway.messages import ToolCall
from observations.gateway.receipts import meaningful_first_line
from observations.gateway.state import dump_fold
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import FileRange, ObservationInput
from observations.gateway.turn import TurnDriver, Usage
from sessions.analysis import loops
from sessions.analysis.loops import LoopRules
from sessions.runtime import obligations
from sessions.runtime.approvals import ASK, DENY, Rule, always_rule, decide
from sessions.runtime.delivery import Input, chat_cursor_after, deliver_inputs
from sessions.runtime.loop_state import BOUNDARY, CALLS, REVIEW, RuntimeState
from sessions.runtime.ports import Host
from sessions.runtime.segments import SegmentStarter
from sessions.runtime.turn_end import TurnEnd
from sessions.runtime.units import Outcome, Settled, UnitResult
from sessions.runtime.write_watch import WriteWatch

_EXIT = re.compile(r"^exit (-?\d+) after ")


class StepLoop:
    def __init__(self, ctx: SessionContext, state: RuntimeState, host: Host, *, clock=time.time,
                 loop_rules: LoopRules | None = None) -> None:
        self.ctx, self.state, self.host, self.clock = ctx, state, host, clock
        self.segments = SegmentStarter(ctx, host)
        self.end = TurnEnd(ctx, state, host, clock=clock)
        self.loop_rules = loop_rules or LoopRules()
        self.writes = WriteWatch(ctx, state, host)

    def advance(self) -> UnitResult:
        if self.state.phase == CALLS:
            return self._settle_next_call()
        if self.state.phase == REVIEW:
            return self.end.next_round() if self.host.reviewing else self.end.review_answered()
        return self._boundary()

    # ------------------------------------------------------------- boundary
    def _boundary(self) -> UnitResult:
        ctx, state, host = self.ctx, self.state, self.host
        if not state.inputs_taken and (inputs := self._take_inputs()[0]):
            # Delivered is committed before the model call, not after its reply (seconds
            # with a real model); the next pass, after a crash too, takes no input again.
            return self._taken(inputs)
        state.inputs_taken = False
        intent = host.read_intent()
        if intent is not None and (event := ctx.refresh_intent(intent)):
            host.emit(event, {"step": ctx.step})
        for alarm in loops.watch(ctx, state.loop_alarms, self.loop_rules, host.check_command):
            state.loop_alarms.append(alarm.key)
            ctx.add_user(alarm.nudge, kind="nudge")
            host.emit("loop.suspected", alarm.payload(ctx.step))
        asked = host.segment_request()
        if asked and not ctx.segment_requested:
            ctx.segment_requested = asked
        records: list[CallRecord] = []

        def done(result: UnitResult) -> UnitResult:
            result.call_records = records
            return self._with_segment(result)

        try:
            completion = self._turn(records).run()
        except ContextTooLarge as exc:
            return done(UnitResult(Outcome.FAILED, reason=str(exc)))
        except ProviderError as exc:
            return done(UnitResult(Outcome.FAILED, reason=f"model call failed: {exc}"))
        turn = completion.turn
        # What a model writes is stored (PostgreSQL refuses NUL and lone surrogates).
        stored = storable_turn(turn)
        text = stored.text
        calls = unique_call_ids(stored.tool_calls, ctx, host)
        # A call whose arguments had to be cleaned is not run with altered arguments.
        unstorable = {clean.id for clean, raw in zip(calls, turn.tool_calls, strict=True)
                      if clean.arguments != raw.arguments}
        ctx.add_assistant(text, calls)
        state.person_waiting = False
        state.last_reply = text
        host.emit("model.reply", {
            "step": ctx.step, "text": text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
            "input_tokens": completion.record.input_tokens, "cached_input_tokens": completion.record.cached_input_tokens,
            "output_tokens": completion.record.output_tokens, "model": completion.record.model,
        })
        if calls:
            state.phase, state.next_call, state.yielded_job = CALLS, 0, None
            state.calls = [{"id": c.id, "name": c.name, "arguments": c.arguments, "unstorable": c.id in unstorable}
                           for c in calls]
            self.writes.calls_begin()
            return done(UnitResult(Outcome.CONTINUE))
        self.writes.forget()
        return done(self.end.finish(text))

    def _taken(self, inputs: list[Input]) -> UnitResult:
        """A unit that took the boundary's inputs: they are marked delivered when it
        commits, and the boundary's next pass, after a crash too, takes none again."""
        self.state.inputs_taken = True
        return UnitResult(Outcome.CONTINUE,
                          delivered=tuple(item.id for item in inputs if item.kind == "steer"),
                          delivered_mentions=tuple(item.id for item in inputs if item.kind == "agent"))

    def _take_inputs(self) -> tuple[list[Input], bool]:
        """Finished jobs' results and people's and agents' messages into the context: the
        messages (marked delivered when the unit commits), and whether anything came."""
        ctx, state, host = self.ctx, self.state, self.host
        state.held_jobs = []
        reports = host.settle_jobs(f"step-{ctx.step}")
        self.writes.after_jobs([report.handle for report in reports])
        for report in reports:
            ctx.add_user(f"[job {report.handle} finished]\n{report.text}", kind="job")
            host.emit("job.finished", {"handle": report.handle, "state": report.state, "exit_code": report.exit_code})
        inputs = host.pending_inputs(chat_after=state.chat_cursor)
        self._deliver(inputs)
        return inputs, bool(reports or inputs)

    def _deliver(self, inputs: list[Input]) -> None:
        state = self.state
        if deliver_inputs(self.ctx, inputs, self.host.emit):
            state.person_waiting = True
            state.chat_cursor = chat_cursor_after(state.chat_cursor, inputs)

    def _with_segment(self, result: UnitResult) -> UnitResult:
        result.closed_segment = self.segments.take_closed()
        return result
    def _turn(self, records: list[CallRecord]) -> TurnDriver[Completion]:
        """The step's request (observations/gateway/turn.py); ``records`` gets every call
        it makes, a handoff's prose and a refused overflow included."""

        def send(boundary: Boundary) -> tuple[Completion, Usage | None]:
            # Its record (or its error's) carries the gateway's view of the request.
            facts = {"projected_tokens": boundary.projection, "prefix": request_breakdown(self.ctx)}
            try:
                completion = self.host.call_model(boundary.request)
            except ProviderError as exc:
                if exc.record is not None:
                    exc.record = replace(exc.record, **facts)
                    records.append(exc.record)
                raise
            record = replace(completion.record, **facts)
            records.append(record)
            return Completion(completion.turn, record), record.usage

        def overflowed(boundary: Boundary, _exc: Exception) -> None:
            self.host.emit("model.overflow", {"step": self.ctx.step, "projection": boundary.projection})

        return TurnDriver(self.ctx, send, lambda reason: self.segments.start(reason, records),
                          on_boundary=self._emit_boundary, on_overflow=overflowed,
                          person_waiting=self.state.person_waiting)

    def _emit_boundary(self, boundary) -> None:
        budget = self.ctx.budget
        self.host.emit("step.started", {
            "step": self.ctx.step + 1, "projection": boundary.projection, "anchored": boundary.anchored,
            "trigger": budget.trigger, "ceiling": budget.ceiling, "window": budget.window,
            "postponed": boundary.postponed, "note": boundary.plan.note,
        })
        if boundary.fold is not None:
            self.host.emit("fold", dump_fold(boundary.fold))

    # ------------------------------------------------------------- tool calls
    def _settle_next_call(self) -> UnitResult:
        state = self.state
        raw = state.calls[state.next_call]
        settled = self._settle(raw, ToolCall(raw["id"], raw["name"], raw["arguments"]))
        if isinstance(settled, UnitResult):
            return settled  # parked; the same call is settled again when the session wakes
        call, outcome, suffix = settled
        state.await_deadline = None
        if outcome.interrupted:
            raw["interrupted"] = True
        self._record(call, outcome, suffix)
        if call.name in registry.VERDICTS and self.host.reviewing and not outcome.is_error:
            return self.end.verdict_given(outcome.arguments)
        state.next_call += 1
        if state.next_call >= len(state.calls):
            cut_short = any(c.get("interrupted") for c in state.calls)
            state.phase, state.calls, state.next_call, state.yielded_job = BOUNDARY, [], 0, None
            # A message that cut a call of this step short is taken with the step's last
            # result: one commit less before delivered. Otherwise the boundary looks, once.
            if cut_short:
                inputs, took = self._take_inputs()
                if took:
                    return self._taken(inputs)
        return UnitResult(Outcome.CONTINUE)

    def _settle(self, raw: dict[str, Any], call: ToolCall) -> UnitResult | Settled:
        """The call as recorded, its outcome and a note for the model, or the unit's
        result when it must wait for a person or a job."""
        state, host = self.state, self.host
        if raw.get("unstorable"):
            return call, host.skip(call, "its arguments hold NUL characters or invalid Unicode; send them without"), ""
        if state.yielded_job:
            return call, host.skip(call, f"an earlier call of this step is still running as job {state.yielded_job}"), ""
        if refused := obligations.refusal(call.name, call.arguments):
            return call, host.skip(call, refused), ""
        arguments = host.rule_arguments(call)
        decision = decide(call.name, arguments, host.approval_rules(),
                          session_allowed=[Rule(**rule) for rule in state.session_allowed])
        if decision == DENY:
            return call, host.skip(call, "the room's approval rules deny this call"), ""
        if decision == ASK:
            return self._settle_asked(call, arguments)
        if call.name in registry.WAITS:
            return self._settle_await(call)
        return call, host.execute(call), ""

    def _settle_asked(self, call: ToolCall, arguments: dict[str, Any]) -> UnitResult | Settled:
        host = self.host
        approval = host.approval(call.id)
        if approval is None:
            if refused := host.cannot_apply(call):  # nobody is asked about an edit that cannot apply
                return call, host.skip(call, f"it cannot apply, so nobody was asked to approve it: {refused}"), ""
            # People judge the call as the rules did: with its path resolved.
            return UnitResult(Outcome.AWAIT_APPROVAL, approval_request=ToolCall(call.id, call.name, arguments))
        if approval.state == "approved":
            if approval.always:
                self.state.session_allowed.append(always_rule(call.name, arguments).to_dict())
            return call, host.execute(call), f"\n[A person ({approval.by}) approved this call.]"
        if approval.state == "denied":
            because = f": {approval.reason}" if approval.reason else ""
            outcome = host.skip(call, f"a person ({approval.by}) denied it{because}")
            self.ctx.add_decision(kind="denial", author=approval.by or "someone",
                                  text=f"{_describe_call(call.name, arguments)} was denied{because}")
            return call, outcome, ""
        return call, host.skip(call, "nobody approved it in time, so it was denied"), ""

    def _settle_await(self, call: ToolCall) -> UnitResult | Settled:
        state, host = self.state, self.host
        now = self.clock()
        if state.await_deadline is None:
            state.await_deadline = now + _await_seconds(call)
        if now < state.await_deadline and not host.await_ready(call, chat_after=state.chat_cursor):
            # Parked until the deadline; beat wakes it sooner when a job ends or a
            # person writes.
            return UnitResult(Outcome.WAIT, wake_at=state.await_deadline)
        if now >= state.await_deadline:
            # The wait already happened while parked: report, don't block again.
            call = ToolCall(call.id, call.name, {**call.arguments, "seconds": 0})
        return call, host.execute(call), ""

    def _record(self, call: ToolCall, outcome: ToolOutcome, suffix: str) -> None:
        state = self.state
        if outcome.yielded:
            state.yielded_job = outcome.job_handle
        if call.name in registry.WRITING and not outcome.is_error:
            state.wrote_files = True
        elif call.name in registry.SHELL_TOOLS:
            state.wrote_files = False
        text = outcome.text + suffix
        source = observation_input(outcome, text)
        if changed := self.writes.after_call(call.id, call.name):
            source = replace(source, written=tuple(dict.fromkeys(source.written + changed)))
        obs = self.ctx.add_tool_result(source)
        self.host.emit("tool.result", {
            "step": self.ctx.step, "call_id": call.id, "tool": call.name, "purpose": outcome.purpose,
            "is_error": outcome.is_error, "exit_code": outcome.exit_code, "job": outcome.job_handle,
            "unknown": outcome.outcome_unknown,
            "served": "note" if obs.alias_of is not None else "text", "tokens": obs.source.tokens,
            "preview": text[:400], "duration_ms": outcome.duration_ms,
        })

def unique_call_ids(calls: tuple[ToolCall, ...], ctx: SessionContext, host: Host) -> tuple[ToolCall, ...]:
    """Call ids key idempotency records, jobs and approvals: a provider that repeats
    an id (within a turn or across the session) gets it re-minted, never a stale
    outcome or someone else's approval."""
    seen = {obs.call_id for obs in ctx.observations}
    if ctx.obs_base:  # earlier segments' results are in the store only
        seen |= host.earlier_call_ids(ctx.obs_base)
    unique = []
    for n, call in enumerate(calls):
        call_id, attempt = call.id or f"call-{ctx.step}-{n}", 0
        while call_id in seen:
            attempt += 1
            call_id = f"{call.id or 'call'}-{ctx.step}-{n}-{attempt}"
        seen.add(call_id)
        unique.append(call if call_id == call.id else ToolCall(call_id, call.name, call.arguments))
    return tuple(unique)


def _await_seconds(call: ToolCall) -> float:
    """How long a parked await may wait: its `seconds`, or an hour for "until a job ends"."""
    seconds = call.arguments.get("seconds") if isinstance(call.arguments, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) and seconds >= 0 else 3600.0


def _describe_call(tool: str, arguments: dict[str, Any]) -> str:
    if tool in registry.SHELL_TOOLS:
        return f"the command `{arguments.get('command', '')}`"
    if "path" in arguments:
        return f"{tool} on {arguments['path']}"
    return f"the {tool} call"


def observation_input(outcome: ToolOutcome, text: str) -> ObservationInput:
    read = None
    if outcome.tool in registry.RANGE_TOOLS and not outcome.is_error and outcome.path and outcome.range_sha256:
        read = FileRange(outcome.path, outcome.line_start, outcome.line_end, outcome.range_sha256)
    exit_code = None
    if outcome.tool in registry.SHELL_TOOLS and (match := _EXIT.match(text)):
        exit_code = int(match.group(1))
    written = (outcome.path,) if outcome.tool in registry.WRITING and outcome.path and not outcome.is_error else ()
    data = text.encode("utf-8", "surrogatepass")
    return ObservationInput(
        call_id=outcome.call_id,
        tool=outcome.tool,
        arguments=outcome.arguments,
        text=text,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        tokens=estimate_tokens(text),
        purpose=outcome.purpose,
        read=read,
        file_fingerprint=outcome.file_sha256 or "",
        first_line=meaningful_first_line(text),
        exit_code=exit_code,
        written=written,
    )
