"""Review before merge in the step loop, in memory (FakeHost): when a round opens, what
parks, what an approval and requested changes do, the bound on rounds, and the
reviewer's side (rounds in, verdicts out, never a check or a merge)."""

from __future__ import annotations

from sessions.runtime import reviews
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import BOUNDARY, REVIEW, RuntimeState
from sessions.runtime.reviews import NextRound, Verdict
from sessions.runtime.units import Outcome
from tests.gateway.factories import make_context
from tests.sessions.runtime.test_loop import FakeHost, run, turn


def approved(n: int, by: str = "critic", person: bool = False) -> Verdict:
    return Verdict(round=n, state=reviews.APPROVED, by=by, by_person=person)


def changes(n: int, reasons: str = "name the constant", by: str = "critic", person: bool = False) -> Verdict:
    return Verdict(round=n, state=reviews.CHANGES_REQUESTED, reasons=reasons, by=by, by_person=person)


def texts(request) -> list[str]:
    return [m.text for m in request.messages if isinstance(m.text, str)]


def merges(host: FakeHost) -> int:
    return host.kinds().count("merge")


def test_with_review_off_a_passing_check_merges_at_once_and_no_round_opens():
    host = FakeHost(turns=[turn("done")], check_command="make check", checks=[0])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED and merges(host) == 1
    assert host.reviews_opened == [] and "review.requested" not in host.kinds()
    assert loop.state.review_round == 0


def test_a_passing_check_opens_a_round_and_the_session_parks_without_merging():
    host = FakeHost(turns=[turn("done")], check_command="make check", checks=[0], review_on=True)
    loop, result = run(host)
    assert result.outcome is Outcome.WAIT and result.wake_at is not None
    assert result.review_opened == (1, "brief of round 1")
    assert loop.state.phase == REVIEW and loop.state.review_round == 1
    assert merges(host) == 0 and host.kinds()[-2:] == ["verify", "review.requested"]


def test_a_failing_check_goes_back_to_the_agent_before_any_review():
    host = FakeHost(turns=[turn("done"), turn("fixed")], check_command="make check", checks=[1, 0], review_on=True)
    loop, result = run(host)
    assert result.outcome is Outcome.WAIT and host.reviews_opened == [1]
    assert host.kinds().count("verify") == 2


def test_a_parked_author_waits_for_the_verdict_without_calling_the_model():
    host = FakeHost(turns=[turn("done")], review_on=True)
    loop, _ = run(host)
    calls = len(host.requests)
    for _ in range(3):  # woken by a steer or its recheck time: still pending
        assert loop.advance().outcome is Outcome.WAIT
    host.verdicts[1] = Verdict(round=1, state=reviews.PENDING)
    assert loop.advance().outcome is Outcome.WAIT
    assert len(host.requests) == calls and merges(host) == 0


def test_an_approval_lets_the_next_unit_merge():
    host = FakeHost(turns=[turn("done")], check_command="make check", checks=[0], review_on=True)
    loop, _ = run(host)
    host.verdicts[1] = approved(1)
    result = loop.advance()
    assert result.outcome is Outcome.SUCCEEDED and result.reason == "merged"
    assert merges(host) == 1 and loop.state.phase == BOUNDARY and loop.state.review_approved
    assert host.kinds().count("verify") == 1  # the check is not run again for the merge


def test_requested_changes_reach_the_author_it_works_on_and_a_new_round_follows_its_next_check():
    host = FakeHost(turns=[turn("done"), turn("renamed it"), turn("renamed, done")], check_command="make check",
                    checks=[0, 0], review_on=True)
    loop, _ = run(host)
    host.verdicts[1] = changes(1, "name the constant MAX_ROWS")
    assert loop.advance().outcome is Outcome.CONTINUE
    assert loop.state.phase == BOUNDARY and merges(host) == 0
    result = loop.advance()  # the next request carries the reviewer's reasons
    told = [t for t in texts(host.requests[-1]) if "MAX_ROWS" in t]
    assert told and "from the reviewer agent critic" in told[0] and "round 1 of 3" in told[0]
    while result.outcome is Outcome.CONTINUE:
        result = loop.advance()
    assert result.outcome is Outcome.WAIT and result.review_opened == (2, "brief of round 2")
    assert host.kinds().count("verify") == 2 and merges(host) == 0
    host.verdicts[2] = approved(2)
    assert loop.advance().outcome is Outcome.SUCCEEDED and merges(host) == 1
    order = [k for k in host.kinds() if k.startswith(("review", "verify", "merge"))]
    assert order == ["verify", "review.requested", "review.returned", "verify", "review.requested", "merge"]


def test_changes_still_requested_after_the_last_round_end_the_session_unmerged():
    host = FakeHost(turns=[turn(f"try {n}") for n in range(1, 4)], review_on=True)
    loop, result = run(host)
    for n in range(1, reviews.MAX_REVIEW_ROUNDS):
        host.verdicts[n] = changes(n, f"reason {n}")
        loop2, result = run(host, ctx=loop.ctx, state=loop.state)
        assert result.outcome is Outcome.WAIT and result.review_opened[0] == n + 1
    host.verdicts[reviews.MAX_REVIEW_ROUNDS] = changes(reviews.MAX_REVIEW_ROUNDS, "still wrong")
    result = StepLoop(loop.ctx, loop.state, host).advance()
    assert result.outcome is Outcome.FAILED and "still wrong" in result.reason
    assert f"after {reviews.MAX_REVIEW_ROUNDS} review rounds" in result.reason and merges(host) == 0


def test_a_persons_requested_changes_are_their_words_kept_as_a_decision():
    host = FakeHost(turns=[turn("done"), turn("ok")], review_on=True)
    loop, _ = run(host)
    host.verdicts[1] = changes(1, "keep the old name for now", by="alice", person=True)
    assert loop.advance().outcome is Outcome.CONTINUE
    decision = loop.ctx.decisions.items[-1]
    assert decision.author == "alice" and "keep the old name for now" in decision.text
    loop.advance()
    assert any("keep the old name for now" in t and "alice" in t for t in texts(host.requests[-1]))
    assert ("review.returned", {"round": 1, "by": "alice", "person": True,
                                "reasons": "keep the old name for now"}) in host.events


def test_a_conflict_resolved_after_an_approval_is_reviewed_again_before_it_merges():
    host = FakeHost(turns=[turn("done"), turn("resolved")], merges=[False, True], handback="resolve a.py",
                    review_on=True)
    loop, _ = run(host)
    host.verdicts[1] = approved(1)
    assert loop.advance().outcome is Outcome.CONTINUE  # the conflict goes back to it
    loop2, result = run(host, ctx=loop.ctx, state=loop.state)
    assert result.outcome is Outcome.WAIT and host.reviews_opened == [1, 2] and merges(host) == 1
    host.verdicts[2] = approved(2)
    assert loop2.advance().outcome is Outcome.SUCCEEDED and merges(host) == 2


# --- the reviewer's side --------------------------------------------------------------------


def reviewer(host: FakeHost) -> StepLoop:
    host.reviewing = True
    return StepLoop(make_context(window=60_000), RuntimeState(phase=REVIEW), host, clock=lambda: 1_000.0)


def until_parked(loop: StepLoop):
    for _ in range(30):
        result = loop.advance()
        if result.outcome is not Outcome.CONTINUE:
            return result
    raise AssertionError("the loop did not settle")


def test_a_reviewer_waits_for_a_round_reads_and_gives_its_verdict():
    host = FakeHost(turns=[turn("looking", ("c1", "read_file", {"path": "a.py"})),
                           turn("", ("c2", "review", {"decision": "request_changes", "reasons": "no tests"}),
                                ("c3", "read_file", {"path": "b.py"}))],
                    check_command="make check", checks=[0])
    loop = reviewer(host)
    assert loop.advance().outcome is Outcome.WAIT  # no round yet
    host.next_rounds = [NextRound(round=1, brief="the diff of round 1")]
    result = until_parked(loop)
    assert any("the diff of round 1" in t for t in texts(host.requests[0]))
    assert result.outcome is Outcome.WAIT and result.verdict == (1, "request_changes", "no tests")
    assert host.executed == ["c1", "c2"]  # the call after the verdict is not run
    assert loop.state.phase == REVIEW and merges(host) == 0 and "verify" not in host.kinds()


def test_a_reviewer_approving_ends_and_so_does_one_with_no_round_left():
    host = FakeHost(turns=[turn("", ("c1", "review", {"decision": "approve", "reasons": "fine"}))],
                    next_rounds=[NextRound(round=2, brief="round 2")])
    loop = reviewer(host)
    result = until_parked(loop)
    assert result.outcome is Outcome.SUCCEEDED and result.verdict == (2, "approve", "fine")
    host = FakeHost(next_rounds=[NextRound(over="the author's session 7 cancelled")])
    result = reviewer(host).advance()
    assert result.outcome is Outcome.SUCCEEDED and "cancelled" in result.reason


def test_the_last_rounds_verdict_ends_the_reviewer_whatever_it_is():
    host = FakeHost(turns=[turn("", ("c1", "review", {"decision": "request_changes", "reasons": "still"}))],
                    next_rounds=[NextRound(round=reviews.MAX_REVIEW_ROUNDS, brief="last")])
    result = until_parked(reviewer(host))
    assert result.outcome is Outcome.SUCCEEDED and result.verdict[1] == "request_changes"


def test_a_reviewer_that_answers_without_a_verdict_is_told_once_then_fails_and_never_merges():
    host = FakeHost(turns=[turn("looks good"), turn("really good")], check_command="make check", checks=[0],
                    next_rounds=[NextRound(round=1, brief="round 1")])
    result = until_parked(reviewer(host))
    assert result.outcome is Outcome.FAILED and "without a verdict" in result.reason
    assert any("review tool" in t for t in texts(host.requests[1]))
    assert merges(host) == 0 and "verify" not in host.kinds()


def test_a_verdict_that_the_tool_refused_does_not_end_the_round():
    host = FakeHost(turns=[turn("", ("c1", "review", {"decision": "maybe", "reasons": "hm"})),
                           turn("", ("c2", "review", {"decision": "approve", "reasons": "ok"}))],
                    next_rounds=[NextRound(round=1, brief="round 1")])
    refused = host.execute

    def execute(call):
        outcome = refused(call)
        if call.arguments.get("decision") == "maybe":
            from dataclasses import replace
            return replace(outcome, is_error=True)
        return outcome

    host.execute = execute
    result = until_parked(reviewer(host))
    assert result.outcome is Outcome.SUCCEEDED and result.verdict == (1, "approve", "ok")


def test_a_person_approving_requested_changes_anyway_lets_the_next_finish_merge_without_a_new_round():
    host = FakeHost(turns=[turn("done"), turn("working on it"), turn("done again")], review_on=True)
    loop, _ = run(host)
    host.verdicts[1] = changes(1)
    assert loop.advance().outcome is Outcome.CONTINUE
    host.verdicts[1] = approved(1, by="alice", person=True)  # while the author works on the changes
    loop2, result = run(host, ctx=loop.ctx, state=loop.state)
    assert result.outcome is Outcome.SUCCEEDED and host.reviews_opened == [1] and merges(host) == 1
