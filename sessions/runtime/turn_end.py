"""The end of a turn: what happens when the model answers without a tool call. The
session's open jobs stand first (obligations.py), then an empty answer's nudge, the
room's check (up to MAX_VERIFY_ROUNDS failing rounds), the review before merge
(reviews.py) and the merge, with a conflict handed back to the session (conflicts.py)
or to a person. A reviewer's session ends with its verdict instead. Plain Python over
the host's repository and job ports."""

from __future__ import annotations

import time
from typing import Any, Protocol

from agents.tools.sandbox import SandboxUnavailable
from observations.gateway.context import SessionContext
from sessions.runtime import conflicts, nudges, obligations, reviews
from sessions.runtime.loop_state import BOUNDARY, REVIEW, RuntimeState
from sessions.runtime.ports import JobsPort, RepositoryPort
from sessions.runtime.units import CheckResult, Outcome, UnitResult

MAX_VERIFY_ROUNDS = 2


class EndHost(RepositoryPort, JobsPort, Protocol):
    pass


class TurnEnd:
    def __init__(self, ctx: SessionContext, state: RuntimeState, host: EndHost, *, clock=time.time) -> None:
        self.ctx, self.state, self.host, self.clock = ctx, state, host, clock

    def finish(self, reply: str) -> UnitResult:
        """The model answered without a tool call: the session's jobs, the check, the
        review and the merge, in that order."""
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
            ctx.notes.add_check(f"- step {ctx.step}: {line}")
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
        """A conflict the session can resolve goes back to it (sessions/runtime/conflicts.py);
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

    # --- review before merge ------------------------------------------------------------
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

    def review_answered(self) -> UnitResult:
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

    def next_round(self) -> UnitResult:
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

    def verdict_given(self, arguments: dict[str, Any]) -> UnitResult:
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
        """The session's jobs stand between it and its end (sessions/runtime/obligations.py)."""
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
