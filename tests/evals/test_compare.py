"""`eval compare A B`: each of the four verdicts on constructed pairs, stored in the
eval ledger."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals.compare import CONFOUNDED, HELPED, HURT, NO_EFFECT, RunFacts, judge
from evals.models import EvalBatch, EvalRun, EvalVerdict


def facts(passed: int, *, total: int = 10, model: str = "openai:gpt-4.1", version: str = "v1",
          scripted: bool = False, state: str = "passed", scenario: str = "s") -> RunFacts:
    return RunFacts(scenario, version, model, scripted, state, passed, total)


def three(passed: int, **kw) -> list[RunFacts]:
    return [facts(passed, **kw) for _ in range(3)]


def test_b_passing_more_checks_helped():
    verdict, detail = judge(three(6), three(9))
    assert verdict == HELPED and "A 60%" in detail and "B 90%" in detail


def test_b_passing_fewer_checks_hurt():
    assert judge(three(9), three(6))[0] == HURT


def test_within_the_margin_is_no_observed_effect():
    assert judge(three(8), [facts(8), facts(8), facts(9)])[0] == NO_EFFECT


@pytest.mark.parametrize("a, b, why", [
    (three(5), three(9, model="anthropic:claude-sonnet-4-5"), "different models"),
    (three(5), three(9, version="v2"), "different scenario versions"),
    (three(5), [facts(9), facts(9)], "too few runs"),
    (three(5), [facts(9, state="skipped")] * 3, "too few runs"),
])
def test_a_pair_that_differs_in_more_than_the_hub_or_has_too_few_runs_is_confounded(a, b, why):
    verdict, detail = judge(a, b)
    assert verdict == CONFOUNDED and why in detail


def test_one_scripted_run_a_side_is_enough_since_it_is_deterministic():
    assert judge([facts(10, scripted=True, model="script")], [facts(7, scripted=True, model="script")])[0] == HURT


def batch_with(model: str, scores: dict[str, list[tuple[int, int]]], *, version: str = "v1") -> EvalBatch:
    batch = EvalBatch.objects.create(model=model, scripted=False, runs_per_scenario=3)
    for scenario, runs in scores.items():
        for number, (passed, total) in enumerate(runs, start=1):
            EvalRun.objects.create(batch=batch, scenario=scenario, scenario_version=version, scenario_kind="topics",
                                   run=number, model=model, state="passed" if passed == total else "failed",
                                   request_passed=passed, request_total=total)
    return batch


@pytest.mark.django_db
def test_eval_compare_lines_two_batches_up_by_scenario_and_stores_every_verdict(tmp_path):
    model = "openai:gpt-4.1"
    a = batch_with(model, {"up": [(5, 10)] * 3, "down": [(9, 10)] * 3, "same": [(8, 10)] * 3, "few": [(8, 10)] * 3})
    b = batch_with(model, {"up": [(9, 10)] * 3, "down": [(5, 10)] * 3, "same": [(8, 10)] * 3, "few": [(8, 10)]})
    out = tmp_path / "verdicts.json"
    call_command("eval", "compare", str(a.pk), str(b.pk), "--json", str(out))
    stored = {v.subject: v for v in EvalVerdict.objects.filter(a_batch=a, b_batch=b)}
    assert {s: v.verdict for s, v in stored.items()} == {"up": HELPED, "down": HURT, "same": NO_EFFECT,
                                                         "few": CONFOUNDED}
    assert all(v.source == "eval" for v in stored.values())
    assert '"verdict": "helped"' in out.read_text()


@pytest.mark.django_db
def test_eval_compare_refuses_unknown_batches():
    with pytest.raises(CommandError, match="no eval batch 9999"):
        call_command("eval", "compare", "9999", "9998")


@pytest.mark.django_db
def test_replay_compare_writes_its_verdicts_to_the_same_ledger(tmp_path):
    import io

    from tests.replay.test_evaluate_command import FIXTURES

    a = tmp_path / "a.json"
    call_command("replay", str(FIXTURES), "--window", "32k", "--policy", "on_demand", "--json", str(a),
                 stdout=io.StringIO(), stderr=io.StringIO())
    out = io.StringIO()
    call_command("replay", "compare", str(a), str(a), stdout=out, stderr=io.StringIO())
    stored = EvalVerdict.objects.filter(source="replay")
    assert stored.exists() and {v.verdict for v in stored} == {NO_EFFECT}
    assert f"{stored.count()} verdict(s) stored in the eval ledger" in out.getvalue()
    assert all(v.a_label == str(a.resolve()) and v.subject.endswith(" 32k") for v in stored)
    assert any(" on_demand 32k" in v.subject for v in stored)


@pytest.mark.django_db
def test_the_profiles_eval_runs_make_for_their_rooms_are_not_offered_to_other_rooms():
    """Issue 30: the eval's script: profiles appeared in every room's Assign list."""
    from agents.models import AgentProfile
    from rooms.models import RoomAgent
    from rooms.selectors import assignable_agents
    from tests.rooms.factories import make_agent, make_room, make_user

    owner = make_user("evaluator")
    eval_room, room = make_room(owner, "eval 1: topics #1"), make_room(owner, "Mine")
    scripted = AgentProfile.objects.create(name="eval-1-topics-1", model="script:x.json")
    RoomAgent.objects.create(room=eval_room, agent=scripted)
    batch = EvalBatch.objects.create(model="script:x", scripted=True)
    EvalRun.objects.create(batch=batch, scenario="topics", scenario_version="1", scenario_kind="topics", run=1,
                           model="script:x", room=eval_room)
    mine = make_agent("mine")
    assert list(assignable_agents(room)) == [mine]
