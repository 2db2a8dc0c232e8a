"""The end of a turn through the step loop, with the fake host: the merge, a conflict handed
back or left to a person, the room's check and its rounds."""

from __future__ import annotations

from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.units import Outcome
from tests.sessions.runtime.test_loop import FakeHost, run, turn


def test_a_turn_without_tool_calls_finishes_and_merges():
    loop, result = run(FakeHost(turns=[turn("nothing to do")]))
    assert result.outcome is Outcome.SUCCEEDED and result.reason == "merged"


def test_a_merge_conflict_ends_in_needs_merge():
    loop, result = run(FakeHost(turns=[turn("done")], merged=False))
    assert result.outcome is Outcome.NEEDS_MERGE and "a.py" in result.reason


def test_a_conflict_the_session_can_resolve_goes_back_to_it_and_the_check_runs_before_the_next_merge():
    host = FakeHost(turns=[turn("done"), turn("resolved"), turn("resolved again")], merges=[False, False, True],
                    handback="main moved on: resolve a.py", check_command="make check", checks=[0, 0, 0])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED
    assert host.handed_back == [1, 2] and loop.state.merge_rounds == 2
    assert [k for k in host.kinds() if k in ("verify", "merge", "merge.handed_back")] == [
        "verify", "merge", "merge.handed_back", "verify", "merge", "merge.handed_back", "verify", "merge"]
    told = [m.text for m in host.requests[1].messages if m.text == "main moved on: resolve a.py"]
    assert told, "the conflict was not in the next request"


def test_handing_a_conflict_back_is_bounded():
    host = FakeHost(turns=[turn("done")] * 5, merged=False, handback="resolve a.py")
    loop, result = run(host)
    assert result.outcome is Outcome.NEEDS_MERGE and "after 3 rounds" in result.reason
    assert host.handed_back == [1, 2, 3]


def test_markers_left_from_a_merge_under_way_go_back_before_the_check_runs():
    # E.g. a worker crash lost the round's count: the merge under way is found again.
    host = FakeHost(turns=[turn("done"), turn("done")], check_command="make check", checks=[0],
                    left=[("conflict markers left in a.py", "resolve a.py again")])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED and loop.state.merge_rounds == 1
    kinds = [k for k in host.kinds() if k in ("verify", "merge", "merge.handed_back")]
    assert kinds == ["merge.handed_back", "verify", "merge"]


def test_a_resolution_gets_the_checks_rounds_afresh():
    host = FakeHost(turns=[turn("done"), turn("resolved"), turn("fixed")], check_command="make check",
                    checks=[0, 1, 0], merges=[False, True], handback="resolve a.py")
    loop, result = run(host, state=RuntimeState(verify_rounds=2))  # the check's rounds were used up
    assert result.outcome is Outcome.SUCCEEDED, result.reason


def test_a_conflict_only_a_person_can_resolve_ends_in_needs_merge_at_once():
    host = FakeHost(turns=[turn("done")], merged=False, handback=None)
    loop, result = run(host)
    assert result.outcome is Outcome.NEEDS_MERGE and result.reason == "conflict in a.py"
    assert loop.state.merge_rounds == 0


def test_a_failing_check_goes_back_to_the_model_at_most_twice():
    host = FakeHost(turns=[turn("done")] * 3, check_command="pytest -q", checks=[1, 1, 1])
    loop, result = run(host)
    assert result.outcome is Outcome.FAILED
    assert result.reason.startswith("verify #3: pytest -q → exit 1 (12 ms)")
    verifies = [p["line"] for k, p in host.events if k == "verify"]
    assert verifies == [f"verify #{n}: pytest -q → exit 1 (12 ms)" for n in (1, 2, 3)]


def test_a_check_that_cannot_be_sandboxed_fails_the_session_with_the_way_to_fix_it(monkeypatch):
    from agents.tools.sandbox import SandboxUnavailable

    host = FakeHost(turns=[turn("done")], check_command="pytest -q", checks=[0])

    def refused():
        raise SandboxUnavailable("Commands cannot run: no sandbox is available on this machine (x). Install bubblewrap")

    monkeypatch.setattr(host, "run_check", refused)
    loop, result = run(host)
    assert result.outcome is Outcome.FAILED
    assert result.reason.startswith("the room's check could not run: Commands cannot run: no sandbox")
    assert not [p for k, p in host.events if k == "merge"]  # nothing unchecked reaches main


def test_a_check_that_passes_on_the_second_round_succeeds():
    host = FakeHost(turns=[turn("done")] * 2, check_command="pytest -q", checks=[1, 0])
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED and loop.state.verify_rounds == 1
