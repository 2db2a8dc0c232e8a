"""The step loop in memory: a fake host, scripted model turns, no database, no worker.

The tools are faked too (their own tests run them for real); what is tested here is
the loop's decisions: order at the boundary, approvals, yields, parking, nudges,
verify rounds, overflow handling.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from agents.providers import CallRecord, Completion
from agents.tools.outcome import ToolOutcome
from agents.tools.shell import JobReport
from observations.gateway.messages import ModelTurn, ToolCall, Usage
from sessions.runtime.approvals import Rule
from sessions.runtime.delivery import Input
from sessions.runtime.file_changes import Reading
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.reviews import NextRound
from sessions.runtime.units import Approval, CheckResult, Outcome
from tests.gateway.factories import make_context


def turn(text: str = "", *calls: tuple[str, str, dict]) -> ModelTurn:
    return ModelTurn(text, tuple(ToolCall(i, n, a) for i, n, a in calls), Usage(input_tokens=1_000))


@dataclass
class FakeHost:
    turns: list = field(default_factory=list)  # ModelTurn or an exception to raise
    check_command: str = ""
    checks: list[int] = field(default_factory=list)  # exit codes, in order
    rules: list[Rule] = field(default_factory=lambda: [Rule("allow")])
    approvals: dict[str, Approval] = field(default_factory=dict)
    inapplicable: dict[str, str] = field(default_factory=dict)  # call id: why it cannot apply
    inputs: list[Input] = field(default_factory=list)
    jobs_done: bool = False
    intent: str | None = None
    yields: set[str] = field(default_factory=set)  # call ids that become jobs
    executed: list[str] = field(default_factory=list)
    earlier_ids: set[str] = field(default_factory=set)  # call ids of earlier segments' stored results
    skipped: list[tuple[str, str]] = field(default_factory=list)
    requests: list = field(default_factory=list)
    events: list[tuple[str, dict]] = field(default_factory=list)
    merged: bool = True
    merges: list[bool] = field(default_factory=list)  # outcomes of successive finishes, then `merged`
    handback: str | None = None  # what hand_back_conflict answers
    handed_back: list[int] = field(default_factory=list)
    left: list = field(default_factory=list)  # what conflict_left answers at successive finishes
    segment_asked: str = ""  # a person pressed New segment
    jobs: list = field(default_factory=list)  # obligations.JobView
    # Review before merge (tests/sessions/runtime/test_reviews.py)
    reviewing: bool = False  # this is a reviewer's session
    review_on: bool = False  # the room has a reviewer
    reviews_opened: list[int] = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)  # round → reviews.Verdict
    next_rounds: list = field(default_factory=list)  # what a reviewer finds, in order (then: nothing yet)
    # What successive readings of the worktree find changed (file_changes.FileChange lists), then nothing.
    file_reads: list = field(default_factory=list)
    readings: int = 0

    def settle_jobs(self, token):
        return ()

    def file_changes(self, before):
        self.readings += 1
        found = self.file_reads.pop(0) if before is not None and self.file_reads else []
        return found, Reading(head="h", files={})

    def segment_request(self):
        asked, self.segment_asked = self.segment_asked, ""
        return asked
    def job_views(self):
        return list(self.jobs)

    def pending_inputs(self, *, chat_after):
        taken, self.inputs = self.inputs, []
        return taken

    def read_intent(self):
        return self.intent

    def approval_rules(self):
        return self.rules

    def approval(self, call_id):
        return self.approvals.get(call_id)

    def rule_arguments(self, call):
        return dict(call.arguments)

    def earlier_call_ids(self, before_seq):
        return set(self.earlier_ids)

    def execute(self, call):
        self.executed.append(call.id)
        handle = f"job-{call.id}" if call.id in self.yields else None
        return ToolOutcome(call.id, call.name, dict(call.arguments), f"ran {call.name}", job_handle=handle)

    def cannot_apply(self, call):
        return self.inapplicable.get(call.id)

    def skip(self, call, reason):
        self.skipped.append((call.id, reason))
        return ToolOutcome(call.id, call.name, dict(call.arguments), f"Not run: {reason}.", is_error=True)

    def await_ready(self, call, *, chat_after):
        return self.jobs_done

    def run_check(self):
        return CheckResult(self.check_command, self.checks.pop(0), "1 failed" if self.checks else "ok", 12)

    def finish(self):
        merged = self.merges.pop(0) if self.merges else self.merged
        return merged, "merged" if merged else "conflict in a.py"

    def hand_back_conflict(self, round_number):
        self.handed_back.append(round_number)
        return self.handback

    def conflict_left(self, round_number):
        return self.left.pop(0) if self.left else None

    def review_request(self, round_number, check):
        if not self.review_on:
            return None
        self.reviews_opened.append(round_number)
        return f"brief of round {round_number}"

    def review_verdict(self, round_number):
        return self.verdicts.get(round_number)

    def next_review(self, after):
        return self.next_rounds.pop(0) if self.next_rounds else NextRound()

    def call_model(self, request):
        self.requests.append(request)
        reply = self.turns.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(reply, CallRecord(model="fake", requested_model="fake", prefix_hash="",
                                            input_tokens=1_000, usage_reported=True))

    def emit(self, kind, payload):
        self.events.append((kind, payload))

    def kinds(self):
        return [k for k, _ in self.events]


def run(host: FakeHost, *, ctx=None, state=None, clock=lambda: 1_000.0, limit: int = 50):
    loop = StepLoop(ctx or make_context(window=60_000), state or RuntimeState(), host, clock=clock)
    for _ in range(limit):
        result = loop.advance()
        if result.outcome is not Outcome.CONTINUE:
            return loop, result
    raise AssertionError("the loop did not settle")


def test_at_the_boundary_a_steer_is_delivered_before_the_request_is_sent():
    host = FakeHost(turns=[turn("ok")], inputs=[Input(7, 3, "steer", "ann", "use tabs")])
    run(host)
    assert host.kinds()[:2] == ["input.delivered", "step.started"]
    assert host.requests[0].messages[-1].text == "[steer from ann, D1] use tabs"


def test_a_steer_is_committed_as_delivered_before_the_model_call_and_not_taken_twice():
    """The boundary's first unit takes the steer (marked delivered when it commits); the
    second, also after a crash between the two, calls the model without taking input
    or job results again."""
    class ClaimedJob(FakeHost):
        def settle_jobs(self, token):
            # A claim with the same token answers again (re-delivery after a crash).
            return (JobReport(handle="j1", state="exited", exit_code=0, text="built"),) if token == "step-0" else ()

    host = ClaimedJob(turns=[turn("ok")], inputs=[Input(7, 3, "steer", "ann", "use tabs")])
    loop = StepLoop(make_context(window=60_000), RuntimeState(), host, clock=lambda: 1_000.0)
    taken = loop.advance()
    assert taken.outcome is Outcome.CONTINUE and taken.delivered == (7,) and not host.requests
    # The worker dies after the commit; another resumes from what it committed.
    host.inputs = [Input(8, 4, "steer", "bob", "later")]
    resumed = StepLoop(loop.ctx, RuntimeState.from_dict(loop.state.to_dict()), host, clock=lambda: 1_000.0)
    called = resumed.advance()
    assert called.delivered == () and len(host.requests) == 1
    texts = [m.text for m in host.requests[0].messages]
    assert sum("use tabs" in t for t in texts) == 1 and sum("built" in t for t in texts) == 1
    assert not any("later" in t for t in texts)  # the next boundary's


def test_a_message_that_arrives_during_the_steps_last_call_is_taken_with_its_result():
    """One commit (the result and the steer, marked delivered) before the next request."""

    class SteeredDuringTheCall(FakeHost):
        def execute(self, call):
            self.inputs = [Input(9, 5, "steer", "ann", "stop the build")]
            return dataclasses.replace(super().execute(call), interrupted=True)  # the doorbell cut it short

    host = SteeredDuringTheCall(turns=[turn("build", ("s0", "shell", {"command": "make"})), turn("ok")])
    loop = StepLoop(make_context(window=60_000), RuntimeState(), host, clock=lambda: 1_000.0)
    loop.advance()  # the model asks for the build
    settled = loop.advance()
    assert settled.delivered == (9,) and len(host.requests) == 1 and loop.state.inputs_taken
    called = loop.advance()
    assert called.delivered == () and len(host.requests) == 2
    assert host.requests[1].messages[-1].text == "[steer from ann, D1] stop the build"


def test_a_step_whose_calls_nobody_cut_short_looks_for_inputs_once_at_its_boundary():
    """Looking costs queries and reads of the job folder: once per step, not also with the
    last result. A message that came during a call nobody cut short (it ended on its own)
    is taken at the boundary, before the next request."""

    class Counting(FakeHost):
        looks = 0

        def pending_inputs(self, *, chat_after):
            self.looks += 1
            return super().pending_inputs(chat_after=chat_after)

        def execute(self, call):
            self.inputs = [Input(9, 5, "steer", "ann", "use tabs")]
            return super().execute(call)

    host = Counting(turns=[turn("read", ("r0", "read_file", {"path": "a.py"}), ("r1", "read_file", {"path": "b.py"})),
                           turn("ok")])
    loop = StepLoop(make_context(window=60_000), RuntimeState(), host, clock=lambda: 1_000.0)
    loop.advance()  # the boundary looks (nothing), the model asks for two reads
    assert host.looks == 1
    assert loop.advance().delivered == () and loop.advance().delivered == ()  # the two reads
    assert host.looks == 1
    taken = loop.advance()  # the boundary
    assert taken.delivered == (9,) and host.looks == 2 and len(host.requests) == 1
    loop.advance()
    assert host.requests[1].messages[-1].text == "[steer from ann, D1] use tabs"


def test_a_changed_intent_file_is_logged_and_sent(monkeypatch):
    host = FakeHost(turns=[turn("ok")])
    ctx = make_context(intent="Objective: A")
    host.intent = "Objective: B"
    run(host, ctx=ctx)
    assert "intent.changed" in host.kinds()
    assert host.requests[0].messages[-1].text.endswith("Objective: B")


def test_calls_after_a_yielded_shell_in_the_same_step_are_not_run():
    host = FakeHost(turns=[turn("go", ("a", "shell", {"command": "make"}), ("b", "read_file", {"path": "x"})),
                           turn("done")], yields={"a"})
    run(host)
    assert host.executed == ["a"]
    assert host.skipped == [("b", "an earlier call of this step is still running as job job-a")]


def test_a_denied_call_is_answered_with_an_error_and_not_run():
    host = FakeHost(turns=[turn("go", ("a", "shell", {"command": "rm -rf /"})), turn("done")],
                    rules=[Rule("allow"), Rule("deny", "shell")])
    run(host)
    assert host.executed == [] and "deny" in host.skipped[0][1]


def test_an_ask_parks_and_the_decision_decides():
    host = FakeHost(turns=[turn("go", ("a", "write_file", {"path": "x", "content": ""})), turn("done"), turn("done")],
                    rules=[])
    loop, result = run(host)
    assert result.outcome is Outcome.AWAIT_APPROVAL and result.approval_request.id == "a"
    assert host.executed == []
    host.approvals["a"] = Approval("approved", by="ann", always=True)
    loop, result = run(host, ctx=loop.ctx, state=loop.state)
    assert result.outcome is Outcome.SUCCEEDED and host.executed == ["a"]
    result_text = next(m.text for m in loop.ctx.transcript.messages if m.tool_call_id == "a")
    assert result_text.endswith("[A person (ann) approved this call.]")
    assert loop.state.session_allowed == [{"decision": "allow", "tool": "write_file", "path_glob": "x",
                                           "command_prefix": "", "command_exact": ""}]


def test_nobody_is_asked_about_an_edit_that_cannot_apply():
    host = FakeHost(turns=[turn("go", ("e", "edit_file", {"path": "x", "old": "gone", "new": "y"})), turn("done")],
                    rules=[], inapplicable={"e": "x: old text not found"})
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED and host.executed == []
    assert host.skipped == [("e", "it cannot apply, so nobody was asked to approve it: x: old text not found")]


def test_an_await_on_a_running_job_parks_until_it_is_ready_or_its_time_is_up():
    host = FakeHost(turns=[turn("wait", ("w", "await", {"seconds": 120})), turn("done")])
    loop, result = run(host, clock=lambda: 1_000.0)
    assert result.outcome is Outcome.WAIT and result.wake_at == 1_120.0 and host.executed == []
    assert loop.state.await_deadline == 1_120.0
    loop, result = run(host, ctx=loop.ctx, state=loop.state, clock=lambda: 1_121.0)
    assert result.outcome is Outcome.SUCCEEDED and host.executed == ["w"]


def test_each_nudge_is_given_once_then_the_turn_may_end():
    host = FakeHost(turns=[
        turn("edit", ("e", "edit_file", {"path": "a", "old": "x", "new": "y"})),
        turn("All done."),  # wrote files, ran nothing since: nudged
        turn("Done. Next, I'll update the docs."),  # promises more: nudged
        turn("Done. Next, I'll update the docs."),  # both nudges used: accepted
    ])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED
    assert [p["kind"] for k, p in host.events if k == "nudge"] == ["unchecked", "promise"]


def test_an_empty_answer_is_nudged_once_and_a_second_one_fails_the_session():
    """Issue 28: an answer with no text and no tool call ended the session "succeeded" and
    merged it, after 2 of 6 steps."""
    host = FakeHost(turns=[turn("look", ("r", "read_file", {"path": "a"})), turn(""), turn("  ")])
    loop, result = run(host)
    assert result.outcome is Outcome.FAILED and "answered with nothing" in result.reason
    assert [p["kind"] for k, p in host.events if k == "nudge"] == ["empty"]
    assert not [p for k, p in host.events if k == "merge"]


def test_an_empty_answer_after_its_nudge_may_be_followed_by_work_and_a_summary():
    host = FakeHost(turns=[turn(""), turn("look", ("r", "read_file", {"path": "a"})), turn(""),
                           turn("All done: nothing needed changing.")])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED  # the second empty answer came after work: nudged again
    assert [p["kind"] for k, p in host.events if k == "nudge"] == ["empty", "empty"]


def test_the_loop_and_its_rules_import_no_django():
    import subprocess
    import sys

    modules = ["sessions.runtime.loop", "sessions.runtime.states", "sessions.runtime.approvals",
               "sessions.runtime.nudges", "sessions.runtime.loop_state"]
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_what_the_model_writes_is_made_storable_before_it_is_kept():
    host = FakeHost(turns=[turn("bad\x00reply \ud800", ("c\x001", "read_file", {"path": "a\x00b"})), turn("done")])
    loop, result = run(host)
    reply = next(m for m in loop.ctx.transcript.messages if m.role == "assistant")
    assert "\x00" not in reply.text and "\ud800" not in reply.text
    call = reply.tool_calls[0]
    assert "\x00" not in call.id and "\x00" not in call.arguments["path"]
    reply.text.encode("utf-8")  # no lone surrogate left


def test_a_call_whose_arguments_had_to_be_cleaned_is_not_run():
    host = FakeHost(turns=[turn("write", ("w", "write_file", {"path": "a.txt", "content": "x\x00y"})), turn("done"),
                           turn("done")])
    run(host)
    assert host.executed == []
    assert host.skipped[0][0] == "w" and "NUL" in host.skipped[0][1]


def test_state_saved_before_always_was_scoped_still_loads():
    state = RuntimeState.from_dict({"phase": "boundary", "session_allowed": ["shell"]})
    assert state.session_allowed == [{"decision": "allow", "tool": "shell"}]
