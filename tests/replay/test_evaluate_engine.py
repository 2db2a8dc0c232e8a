"""The replay engine, the totals over a result set, and the estimator check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from observations.gateway.receipts import render_receipt
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import Observation
from observations.replay.eval.calibration import estimator_error, percentile
from observations.replay.eval.cost import PRICES
from observations.replay.eval.engine import (
    NO_SEGMENTS,
    ReplaySettings,
    observation_input,
    output_tokens,
    replay,
    tool_schemas,
)
from observations.replay.eval.results import ResultSet
from observations.replay.eval.runner import replay_all, with_baseline
from observations.replay.eval.summary import summarize
from observations.replay.load import load_trajectories
from observations.replay.trajectory import Step, ToolEvent
from tests.replay.test_evaluate_factories import file_text, read_event, shell_event, trajectory

FIXTURES = Path(__file__).parent / "fixtures"


def huge_output_run():
    # One result larger than a 16k window's ceiling: nothing may evict a fresh result.
    events = [
        read_event("c0", "a.py", file_text("a.py", 40)),
        shell_event("c1", "make", "error: boom\n" * 5_000),
    ]
    events.append(shell_event("c2", "ls", "a.py\n"))
    return trajectory(events)


def test_without_segments_a_run_that_cannot_fit_what_it_may_not_evict_fails_without_crashing():
    run = replay(huge_output_run(), NO_SEGMENTS, 16_000)
    assert run.failed and run.failure.startswith("step 2:")
    assert run.requests == 2
    assert run.over_ceiling == 0


def test_with_segments_the_same_run_goes_on_in_a_new_segment():
    run = replay(huge_output_run(), "on_demand", 16_000)
    assert not run.failed and run.over_ceiling == 0
    assert len(run.segments) == 1 and run.handoffs[0]["bytes"] > 0
    # The prose request is billed like any other: one more request than recorded steps.
    assert run.requests == 4


def test_the_baselines_send_it_anyway_and_show_it_over_the_ceiling():
    run = replay(huge_output_run(), "eager", 16_000)
    assert not run.failed
    assert run.over_ceiling == 1 and run.over_window == 1


def test_ratios_to_none_are_taken_over_every_run_and_stopped_runs_are_counted():
    results = ResultSet(
        settings={}, policies=with_baseline([NO_SEGMENTS, "eager"]), windows=[16_000]
    )
    settings = ReplaySettings()
    ok = trajectory(
        [read_event(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 30)) for n in range(4)],
        trajectory_id="ok",
    )
    results.trajectories = [
        replay_all(ok, results.policies, results.windows, settings),
        replay_all(huge_output_run(), results.policies, results.windows, settings),
    ]
    rows = {row.policy: row for row in summarize(results)}
    assert rows[NO_SEGMENTS].failed == 1 and rows[NO_SEGMENTS].runs == 2
    assert rows["none"].sent_ratio == 1.0
    total = {p: sum(t.totals[(p, 16_000)].cost for t in results.trajectories) for p in ("none", "eager", NO_SEGMENTS)}
    assert rows["eager"].cost_ratio == pytest.approx(total["eager"] / total["none"])
    assert rows[NO_SEGMENTS].cost_ratio == pytest.approx(total[NO_SEGMENTS] / total["none"])


def test_none_is_always_the_first_policy():
    assert with_baseline(["on_demand", "none", "eager"]) == ["none", "on_demand", "eager"]
    with pytest.raises(ValueError, match="unknown policy"):
        with_baseline(["lazy"])


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown policy"):
        replay(trajectory([]), "lazy", 32_000)


def test_recorded_tool_schemas_are_sent_with_every_request():
    meta = {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "run",
                    "description": "Run it.",
                    "parameters": {"type": "object"},
                },
            },
            {"name": "bare", "description": "", "parameters": None},
            "junk",
        ]
    }
    schemas = tool_schemas(meta)
    assert [s.name for s in schemas] == ["run", "bare"]
    assert schemas[0].parameters == {"type": "object"} and schemas[1].parameters == {}


def test_output_tokens_are_recorded_ones_or_the_estimate_of_what_was_written():
    assert output_tokens(Step(0, "text", reported_output_tokens=77)) == 77
    call = ToolEvent("c", "edit", {"path": "a.py", "new": "x = 1"}, "ok", call_in_text=False)
    written = Step(0, "Editing now.", (call,))
    assert output_tokens(written) == estimate_tokens("Editing now.") + estimate_tokens(
        '{"path": "a.py", "new": "x = 1"}'
    )


class TestEstimatorError:
    def test_median_and_p95_of_the_relative_error(self):
        pairs = [(110, 100), (95, 100), (100, 100), (150, 100)]
        error = estimator_error([pairs, []])
        assert error is not None
        assert error.runs == 1 and error.calls == 4
        assert error.median_abs_pct == 7.5  # |10|, |5|, 0, |50|
        assert error.p95_abs_pct == 50.0
        assert error.median_pct == 5.0

    def test_no_reported_counts_no_verdict(self):
        assert estimator_error([[]]) is None

    def test_percentile_is_nearest_rank(self):
        assert percentile(list(range(1, 101)), 0.95) == 95


class TestEstimator:
    def test_a_long_run_of_letters_costs_about_a_token_per_four(self):
        assert 2_200 <= estimate_tokens("x" * 10_000) <= 2_800

    def test_digits_and_punctuation_cost_more_than_words(self):
        assert estimate_tokens("1234567890") > estimate_tokens("abcdefghij") * 5
        assert estimate_tokens("{}[]();,.:") > estimate_tokens("abcdefghij") * 3

    def test_empty_is_zero_and_anything_else_at_least_one(self):
        assert estimate_tokens("") == 0
        assert estimate_tokens("a") == 1


def test_native_tool_call_arguments_count_in_what_is_sent():
    arguments = {"command": "view", "path": "/repo/a.py"}

    def run(call_in_text: bool):
        event = ToolEvent("c0", "str_replace_editor", arguments, "ok", call_in_text=call_in_text)
        steps = [Step(0, "look", (event,)), Step(1, "done", ())]
        return replay(trajectory([], steps=steps), "none", 32_000)

    native, in_text = run(False), run(True)
    assert native.sent[0] == in_text.sent[0]
    # The gateway counts a native call's name and arguments; a call written in the text
    # is counted with the text, so only its name is left on the wire shape.
    native_call = estimate_tokens("str_replace_editor" + json.dumps(arguments, sort_keys=True))
    assert native.sent[1] - in_text.sent[1] == native_call - estimate_tokens("str_replace_editor{}") > 0


def test_on_demand_without_notes_separates_folding_from_the_ledgers_notes():
    from tests.replay.test_evaluate_factories import rereads_config

    run = rereads_config(others=2, attempts=3)
    none, notes, plain = (replay(run, policy, 128_000) for policy in ("none", "on_demand", "on_demand-no-notes"))
    # Far under the trigger nothing folds: without notes on_demand sends what none sends,
    # with them the unchanged re-reads shrink to a line each.
    assert plain.sent == none.sent
    assert sum(notes.sent) < sum(none.sent)


def test_a_result_that_read_no_file_is_named_by_its_call_as_the_gateway_endpoint_names_it():
    """The evaluator's receipts are the ones a live gateway sends: a command's output is
    named by the command (so the model knows which output it stands for), a read by its
    file and range, and a very long call is cut."""
    ran = observation_input(shell_event("c1", "cd /testbed && python -m pytest -x tests/", "3 passed"))
    assert ran.purpose == 'bash {"command": "cd /testbed && python -m pytest -x tests/"}'
    assert render_receipt(Observation(0, 0, ran)).startswith(
        '[receipt 61affed06dc6] bash {"command": "cd /testbed && python -m pytest -x tests/"}: 8 bytes')
    read = observation_input(read_event("c2", "src/app.py", "x = 1\n", 1, 1))
    assert read.purpose == "read src/app.py lines 1-1"
    long = observation_input(shell_event("c3", "echo " + "y" * 500, "y"))
    assert long.purpose.endswith("…") and len(long.purpose) == len("bash ") + 200


# The folds on_demand made before the working-set guard (commit 2dee117), per fixture,
# window and prices: with the guard off it must decide exactly as it did.
BEFORE_THE_GUARD = {
    "astropy__astropy-13033": {(8000, "anthropic"): [2, 11, 14], (8000, "openai"): [2, 11, 14],
                               (8000, "uncached"): [2, 10, 11, 14], (16000, "anthropic"): [11],
                               (16000, "openai"): [11], (16000, "uncached"): [3, 7, 8, 9, 11],
                               (32000, "anthropic"): [], (32000, "openai"): [11], (32000, "uncached"): [3, 7, 8, 9, 11]},
    "astropy__astropy-7606": {(8000, "anthropic"): [], (8000, "openai"): [], (8000, "uncached"): [4, 6],
                              (16000, "anthropic"): [], (16000, "openai"): [3], (16000, "uncached"): [3, 5],
                              (32000, "anthropic"): [], (32000, "openai"): [3], (32000, "uncached"): [3, 5]},
    "django__django-13109": {(8000, "anthropic"): [5, 6, 9], (8000, "openai"): [5, 6, 9],
                             (8000, "uncached"): [5, 6, 9, 11], (16000, "anthropic"): [9], (16000, "openai"): [6],
                             (16000, "uncached"): [3, 4, 5, 6, 8, 10], (32000, "anthropic"): [9],
                             (32000, "openai"): [6], (32000, "uncached"): [3, 4, 5, 6, 8, 10]},
    "ponylang__ponyc-4593": {(8000, "anthropic"): [], (8000, "openai"): [], (8000, "uncached"): [],
                             (16000, "anthropic"): [], (16000, "openai"): [], (16000, "uncached"): [15],
                             (32000, "anthropic"): [], (32000, "openai"): [], (32000, "uncached"): [15]},
}


def test_without_the_working_set_guard_on_demand_folds_where_it_did_before_it():
    trajectories = {t.trajectory_id: t for t in load_trajectories([FIXTURES]).trajectories}
    assert set(trajectories) == set(BEFORE_THE_GUARD)
    for trajectory_id, expected in BEFORE_THE_GUARD.items():
        for (window, prices), folds in expected.items():
            run = replay(trajectories[trajectory_id], "on_demand-no-guard", window, ReplaySettings(cost=PRICES[prices]))
            assert run.folds == folds, (trajectory_id, window, prices)
