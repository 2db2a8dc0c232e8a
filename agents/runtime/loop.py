"""The step loop, one unit of work at a time, over plain data.

A unit is either a step boundary (settle finished jobs, read people's messages,
re-read the intent file, let the gateway project and fold, send the request) or the
settling of one tool call. After every unit the caller commits the state, so a worker
that dies loses at most the unit in flight. Nothing here touches the database: the
`Host` does (see agents/runtime/host.py), which keeps this testable in memory.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

from agents.analysis import loops
from agents.analysis.loops import LoopRules
from agents.providers import CallRecord, Completion, ProviderError
from agents.runtime import conflicts, nudges, obligations, reviews
from agents.runtime.approvals import ASK, DENY, Rule, always_rule, decide
from agents.runtime.delivery import Input, chat_cursor_after, deliver_inputs
from agents.runtime.segments import SegmentStarter
from agents.runtime.state import BOUNDARY, CALLS, REVIEW, RuntimeState
from agents.tools import registry
from agents.tools.outcome import ToolOutcome
from agents.tools.sandbox import SandboxUnavailable
from agents.tools.shell import JobReport
from agents.tools.text import clean_data, clean_text
from observations.gateway.breakdown import request_breakdown
from observations.gateway.context import Boundary, ContextTooLarge, SessionContext
from observations.gateway.messages import ToolCall
from observations.gateway.receipts import meaningful_first_line
from observations.gateway.segments import HistoryItem
from observations.gateway.state import dump_fold
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import FileRange, ObservationInput
from observations.gateway.turn import TurnDriver, Usage

MAX_VERIFY_ROUNDS = 2
_EXIT = re.compile(r"^exit (-?\d+) after ")
# A settled tool call: the call as recorded, its outcome, and a note appended for the model.
Settled = tuple[ToolCall, ToolOutcome, str]


class Outcome(StrEnum):
    CONTINUE = "continue"
    AWAIT_APPROVAL = "awaiting_approval"
    WAIT = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NEEDS_MERGE = "needs_merge"


@dataclass(frozen=True, slots=True)
class CheckResult:
    command: str
    exit_code: int
    output: str
    duration_ms: int

    @property
    def line(self) -> str:
        return f"{self.command} → exit {self.exit_code} ({self.duration_ms} ms)"


@dataclass(frozen=True, slots=True)
class Approval:
    state: str  # "approved", "denied" or "expired"
    by: str = ""
    always: bool = False
    reason: str = ""  # a denial's reason, in the person's words


@dataclass
class UnitResult:
    outcome: Outcome
    reason: str = ""
    wake_at: float | None = None
    delivered: tuple[int, ...] = ()  # steer ids to mark delivered when this unit commits
    delivered_mentions: tuple[int, ...] = ()  # agents' posts (message ids) this unit delivered
    call_records: list[CallRecord] = field(default_factory=list)
    approval_request: ToolCall | None = None
    # A segment ended in this unit: its number and its messages, calls and results, to
    # be stored for history_search.
    closed_segment: tuple[int, list[HistoryItem]] | None = None
    # Review before merge (agents/runtime/reviews.py): an author opens round n with this
    # brief; a reviewer gives its verdict on round n (decision, reasons).
    review_opened: tuple[int, str] | None = None
    verdict: tuple[int, str, str] | None = None


class Host(Protocol):
    check_command: str

    def segment_request(self) -> str: ...  # who asked for a new segment ("" if nobody)
    def settle_jobs(self, token: str) -> tuple[JobReport, ...]: ...
    def job_views(self) -> list[obligations.JobView]: ...
    def pending_inputs(self, *, chat_after: int) -> list[Input]: ...
    def read_intent(self) -> str | None: ...
    def approval_rules(self) -> list[Rule]: ...
    def approval(self, call_id: str) -> Approval | None: ...
    def rule_arguments(self, call: ToolCall) -> dict[str, Any]: ...
    def execute(self, call: ToolCall) -> ToolOutcome: ...
    def skip(self, call: ToolCall, reason: str) -> ToolOutcome: ...
    def await_ready(self, call: ToolCall, *, chat_after: int) -> bool: ...
    def run_check(self) -> CheckResult: ...
    def finish(self) -> tuple[bool, str]: ...
    # The conflict of the last finish, handed to the session (the text it is told), or
    # None when a person has to resolve it.
    def hand_back_conflict(self, round_number: int) -> str | None: ...
    # A merge of main under way with markers left: (detail, what the agent is told).
    def conflict_left(self, round_number: int) -> tuple[str, str] | None: ...
    # Review before merge (agents/runtime/reviews.py). ``reviewing``: this session is a
    # reviewer's. ``review_request`` commits the author's work and answers the brief of
    # round n, or None when the room has no reviewer (then the work merges at once).
    reviewing: bool
    def review_request(self, round_number: int, check: CheckResult | None) -> str | None: ...
    def review_verdict(self, round_number: int) -> reviews.Verdict | None: ...
    def next_review(self, after: int) -> reviews.NextRound: ...  # for a reviewer
    def call_model(self, request) -> Any: ...  # -> agents.providers.Completion
    def emit(self, kind: str, payload: dict[str, Any]) -> None: ...


class StepLoop:
    def __init__(self, ctx: SessionContext, state: RuntimeState, host: Host, *, clock=time.time,
                 loop_rules: LoopRules | None = None) -> None:
        self.ctx, self.state, self.host, self.clock = ctx, state, host, clock
        self.segments = SegmentStarter(ctx, host)
        self.loop_rules = loop_rules or LoopRules()

    def advance(self) -> UnitResult:
        if self.state.phase == CALLS:
            return self._settle_next_call()
        if self.state.phase == REVIEW:
            return self._next_round() if self.host.reviewing else self._review_answered()
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
        text = clean_text(turn.text)
        calls = self._unique_ids(tuple(
            ToolCall(clean_text(c.id), clean_text(c.name), clean_data(c.arguments)) for c in turn.tool_calls
        ))
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
            return done(UnitResult(Outcome.CONTINUE))
        return done(self._finish_turn(text))

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
    def _unique_ids(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """Call ids key idempotency records, jobs and approvals: a provider that repeats
        an id (within a turn or across the session) gets it re-minted, never a stale
        outcome or someone else's approval."""
        seen = {obs.call_id for obs in self.ctx.observations}
        unique = []
        for n, call in enumerate(calls):
            call_id, attempt = call.id or f"call-{self.ctx.step}-{n}", 0
            while call_id in seen:
                attempt += 1
                call_id = f"{call.id or 'call'}-{self.ctx.step}-{n}-{attempt}"
            seen.add(call_id)
            unique.append(call if call_id == call.id else ToolCall(call_id, call.name, call.arguments))
        return tuple(unique)

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
            return self._verdict_given(outcome.arguments)
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
        obs = self.ctx.add_tool_result(observation_input(outcome, text))
        self.host.emit("tool.result", {
            "step": self.ctx.step, "call_id": call.id, "tool": call.name, "purpose": outcome.purpose,
            "is_error": outcome.is_error, "job": outcome.job_handle, "unknown": outcome.outcome_unknown,
            "served": "note" if obs.alias_of is not None else "text", "tokens": obs.source.tokens,
            "preview": text[:400], "duration_ms": outcome.duration_ms,
        })

    # ------------------------------------------------------------- end of a turn
    def _finish_turn(self, reply: str) -> UnitResult:
        ctx, state, host = self.ctx, self.state, self.host
        if (held := self._open_jobs()) is not None:
            return held
        if host.reviewing:
            return self._reviewer_ended_turn()
        answered = ctx.entries[-2] if len(ctx.entries) >= 2 else None  # what this reply answered
        if nudges.empty_again(reply, told=answered.text if answered is not None and answered.kind == "nudge" else ""):
            return UnitResult(Outcome.FAILED, reason="the model answered with nothing (no text, no tool call) "
                                                     "again after it was told")
        nudge = nudges.nudge_for(reply=reply, wrote_files=state.wrote_files, nudged=state.nudged)
        if nudge:
            if nudge not in state.nudged:
                state.nudged.append(nudge)
            ctx.add_user(nudges.NUDGE_TEXT[nudge], kind="nudge")
            host.emit("nudge", {"kind": nudge})
            return UnitResult(Outcome.CONTINUE)
        if (left := host.conflict_left(state.merge_rounds + 1)) is not None:
            # Main is being merged in and markers remain (also after a worker crash that
            # lost the round's count): the conflicts again, before a check that would fail.
            return self._hand_back(*left)
        check = None
        if host.check_command:
            try:
                check = host.run_check()
            except SandboxUnavailable as exc:
                return UnitResult(Outcome.FAILED, reason=f"the room's check could not run: {exc}")
            state.verifies += 1
            line = f"verify #{state.verifies}: {check.line}"
            ctx.add_check(f"- step {ctx.step}: {line}")
            host.emit("verify", {"number": state.verifies, "line": line, "exit_code": check.exit_code,
                                 "output": check.output[-4000:]})
            if check.exit_code != 0:
                if state.verify_rounds >= MAX_VERIFY_ROUNDS:
                    return UnitResult(Outcome.FAILED, reason=f"{line}; the check still fails after "
                                                             f"{MAX_VERIFY_ROUNDS} rounds")
                state.verify_rounds += 1
                ctx.add_user(f"{line}\n{check.output}\nThe check failed. Fix the cause, then finish again.",
                             kind="verify")
                return UnitResult(Outcome.CONTINUE)
        if (opened := self._open_review(check)) is not None:
            return opened
        return self._merge()

    def _merge(self) -> UnitResult:
        host = self.host
        merged, detail = host.finish()
        host.emit("merge", {"merged": merged, "detail": detail})
        if merged:
            return UnitResult(Outcome.SUCCEEDED, reason=detail)
        return self._hand_back_conflict(detail)

    def _hand_back_conflict(self, detail: str) -> UnitResult:
        """A conflict the session can resolve goes back to it (agents/runtime/conflicts.py);
        anything else waits for a person."""
        if self.state.merge_rounds >= conflicts.MAX_MERGE_ROUNDS:
            return self._hand_back(detail, None)
        report = self.host.hand_back_conflict(self.state.merge_rounds + 1)
        if report is None:
            return UnitResult(Outcome.NEEDS_MERGE, reason=detail)
        return self._hand_back(detail, report)

    def _hand_back(self, detail: str, report: str | None) -> UnitResult:
        """At most MAX_MERGE_ROUNDS times; each round gets the check's rounds afresh (a
        resolution is new work, not another try at the last fix)."""
        state = self.state
        if report is None or state.merge_rounds >= conflicts.MAX_MERGE_ROUNDS:
            return UnitResult(Outcome.NEEDS_MERGE, reason=f"{detail}; still unmerged after "
                                                          f"{conflicts.MAX_MERGE_ROUNDS} rounds of resolving")
        state.merge_rounds += 1
        state.verify_rounds = 0
        if state.review_approved:  # the resolution is new code: a new round reviews it
            state.review_approved, state.review_stale_round = False, state.review_round
        self.ctx.add_user(report, kind="merge")
        self.host.emit("merge.handed_back", {"round": state.merge_rounds, "detail": detail, "told": report[:4000]})
        return UnitResult(Outcome.CONTINUE)

    # ------------------------------------------------------------- review before merge
    def _open_review(self, check: CheckResult | None) -> UnitResult | None:
        """The author's work passed the check: a new review round, unless a round already
        approved it (a conflict handed back after that merges without one; a person's
        "approve anyway" of requested changes) or the room has no reviewer. The session
        parks until the round is decided."""
        state, host = self.state, self.host
        if state.review_round > state.review_stale_round and not state.review_approved:
            # A person may have approved the last round's requested changes anyway.
            last = host.review_verdict(state.review_round)
            state.review_approved = last is not None and last.state == reviews.APPROVED
        if state.review_approved:
            return None
        brief = host.review_request(state.review_round + 1, check)
        if brief is None:
            return None
        state.review_round += 1
        state.phase = REVIEW
        host.emit("review.requested", {"round": state.review_round, "of": reviews.MAX_REVIEW_ROUNDS})
        return UnitResult(Outcome.WAIT, wake_at=self.clock() + reviews.RECHECK_SECONDS,
                          review_opened=(state.review_round, brief))

    def _review_answered(self) -> UnitResult:
        """An author parked on round ``review_round``: approved, it merges; changes
        requested, they become its next message, within MAX_REVIEW_ROUNDS."""
        state, host = self.state, self.host
        verdict = host.review_verdict(state.review_round)
        if verdict is None or verdict.state == reviews.PENDING:
            return UnitResult(Outcome.WAIT, wake_at=self.clock() + reviews.RECHECK_SECONDS)
        state.phase = BOUNDARY
        if verdict.state == reviews.APPROVED:
            state.review_approved = True
            return self._merge()
        if verdict.by_person:
            # A person's words: delivered like a steer and kept as a decision.
            self.ctx.add_person(kind="steer", author=verdict.by, text=reviews.person_changes_text(verdict))
        elif state.review_round >= reviews.MAX_REVIEW_ROUNDS:
            return UnitResult(Outcome.FAILED, reason=reviews.exhausted_reason(verdict))
        else:
            self.ctx.add_user(reviews.changes_message(verdict), kind="review")
        state.verify_rounds = 0  # a new round of work: the check may fail again before it passes
        host.emit("review.returned", {"round": verdict.round, "by": verdict.by, "person": verdict.by_person,
                                      "reasons": verdict.reasons[:4000]})
        return UnitResult(Outcome.CONTINUE)

    def _next_round(self) -> UnitResult:
        """A reviewer between rounds: the next round's brief, or its end."""
        state, host = self.state, self.host
        found = host.next_review(state.review_round)
        if found.over:
            return UnitResult(Outcome.SUCCEEDED, reason=found.over)
        if not found.brief:
            return UnitResult(Outcome.WAIT, wake_at=self.clock() + reviews.RECHECK_SECONDS)
        state.phase, state.review_round, state.nudged = BOUNDARY, found.round, []
        self.ctx.add_user(found.brief, kind="review")
        host.emit("review.started", {"round": found.round})
        return UnitResult(Outcome.CONTINUE)

    def _verdict_given(self, arguments: dict[str, Any]) -> UnitResult:
        """The reviewer called ``review``: the round's verdict leaves with this unit; the
        calls after it in the same step are not run. An approval, or the last round, ends
        the reviewer; otherwise it waits for the author's next round."""
        state = self.state
        decision, reasons = str(arguments.get("decision", "")), str(arguments.get("reasons", ""))
        state.phase, state.calls, state.next_call, state.yielded_job = REVIEW, [], 0, None
        verdict = (state.review_round, decision, reasons)
        if decision == reviews.APPROVE or state.review_round >= reviews.MAX_REVIEW_ROUNDS:
            return UnitResult(Outcome.SUCCEEDED, reason=f"review round {state.review_round}: "
                                                        f"{decision.replace('_', ' ')}", verdict=verdict)
        return UnitResult(Outcome.WAIT, wake_at=self.clock() + reviews.RECHECK_SECONDS, verdict=verdict)

    def _reviewer_ended_turn(self) -> UnitResult:
        """A reviewer answered without a verdict: told once, then the round is left to
        people (the session fails; the round stays pending on the author's page)."""
        if "verdict" in self.state.nudged:
            return UnitResult(Outcome.FAILED, reason="the reviewer ended without a verdict; a person decides "
                                                     "the review")
        self.state.nudged.append("verdict")
        self.ctx.add_user("End the review round with the review tool: decision approve or request_changes, "
                          "and your reasons.", kind="nudge")
        self.host.emit("nudge", {"kind": "verdict"})
        return UnitResult(Outcome.CONTINUE)

    def _open_jobs(self) -> UnitResult | None:
        """The session's jobs stand between it and its end (agents/runtime/obligations.py)."""
        verdict = obligations.before_ending(self.host.job_views(), reminded=self.state.jobs_reminded)
        if verdict.action == "end":
            return None
        if verdict.action == "remind":
            self.state.jobs_reminded = list(verdict.handles)
            self.ctx.add_user(verdict.text, kind="jobs")
        elif verdict.action == "hold":
            self.state.held_jobs = list(verdict.handles)
            self.ctx.add_user(obligations.hold_note(verdict.handles), kind="jobs")
            self.host.emit("jobs.open", {"action": "hold", "handles": list(verdict.handles)})
            return UnitResult(Outcome.WAIT, wake_at=self.clock() + obligations.HOLD_SECONDS)
        self.host.emit("jobs.open", {"action": verdict.action, "handles": list(verdict.handles)})
        return UnitResult(Outcome.CONTINUE)


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
