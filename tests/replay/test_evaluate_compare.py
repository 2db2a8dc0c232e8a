"""`replay compare`: one label per aligned run, thresholds and totals printed."""

from __future__ import annotations

import io

from rich.console import Console

from observations.replay.eval.compare import (
    CONFOUNDED,
    HELPED,
    HURT,
    NO_EFFECT,
    compare,
    render_comparison,
)
from observations.replay.eval.results import ResultSet, RunTotals, TrajectoryResult

SETTINGS = {
    "output_budget": 4096,
    "cost": {"cache_read": 0.1},
    "estimator": {"WORD_PPM": 1},
    "gateway": {},
}


def totals(
    cost: float, *, denied: int = 0, over_ceiling: int = 0, failure: str | None = None
) -> RunTotals:
    return RunTotals(
        policy="on_demand",
        window=32_000,
        requests=10,
        sent=1_000,
        cache_read=900,
        cache_write=100,
        uncached=0,
        input_cost=cost,
        output_cost=0.0,
        folds=1,
        receipts=3,
        rereads_after_eviction=0,
        denied_rereads=denied,
        over_window=0,
        over_ceiling=over_ceiling,
        failure=failure,
    )


def result_set(
    runs: dict[str, RunTotals],
    *,
    model: str = "m",
    fingerprints: dict[str, str] | None = None,
    settings: dict | None = None,
) -> ResultSet:
    results = ResultSet(settings=settings or SETTINGS, policies=["on_demand"], windows=[32_000])
    for trajectory_id, run in runs.items():
        t = TrajectoryResult(
            source="swe-agent",
            trajectory_id=trajectory_id,
            path=f"{trajectory_id}.traj",
            model=model,
            fingerprint=(fingerprints or {}).get(trajectory_id, "f-" + trajectory_id),
            steps=10,
        )
        t.totals[(run.policy, run.window)] = run
        results.trajectories.append(t)
    return results


def label(a: RunTotals, b: RunTotals, **b_kwargs) -> str:
    comparison = compare(result_set({"t": a}), result_set({"t": b}, **b_kwargs))
    [verdict] = comparison.verdicts
    return verdict.label


def test_cheaper_beyond_the_threshold_helped():
    assert label(totals(1_000), totals(950)) == HELPED


def test_dearer_beyond_the_threshold_hurt():
    assert label(totals(1_000), totals(1_050)) == HURT


def test_within_the_threshold_no_observed_effect():
    assert label(totals(1_000), totals(1_005)) == NO_EFFECT
    assert label(totals(1_000), totals(995)) == NO_EFFECT


def test_a_different_model_is_confounded():
    assert label(totals(1_000), totals(500), model="other") == CONFOUNDED


def test_different_inputs_are_confounded():
    assert label(totals(1_000), totals(500), fingerprints={"t": "changed"}) == CONFOUNDED


def test_different_measurement_settings_are_confounded():
    settings = {**SETTINGS, "cost": {"cache_read": 0.2}}
    assert label(totals(1_000), totals(500), settings=settings) == CONFOUNDED


def test_gateway_defaults_are_the_treatment_not_a_confounder():
    settings = {**SETTINGS, "gateway": {"target_ratio": 0.3}}
    assert label(totals(1_000), totals(500), settings=settings) == HELPED


def test_a_new_denied_reread_is_hurt_even_when_cheaper():
    assert label(totals(1_000), totals(500, denied=1)) == HURT


def test_fewer_requests_over_the_ceiling_helped_even_when_dearer():
    assert label(totals(1_000, over_ceiling=3), totals(1_100)) == HELPED


def test_a_run_that_now_fails_is_hurt():
    assert label(totals(1_000), totals(400, failure="too large")) == HURT


def test_both_failing_is_no_observed_effect():
    assert label(totals(1_000, failure="x"), totals(400, failure="x")) == NO_EFFECT


def test_output_prints_thresholds_totals_and_unmatched_runs():
    a = result_set({"t1": totals(1_000), "t2": totals(1_000), "gone": totals(1)})
    b = result_set({"t1": totals(900), "t2": totals(1_000), "new": totals(1)})
    comparison = compare(a, b)
    assert comparison.only_a == ["swe-agent/gone"] and comparison.only_b == ["swe-agent/new"]
    buffer = io.StringIO()
    render_comparison(comparison, Console(file=buffer, width=200), names=("A.json", "B.json"))
    text = buffer.getvalue()
    assert "thresholds: helped/hurt when a run's cost index changes by at least 1%" in text
    assert "totals: 2 runs compared: 1 helped, 0 hurt, 1 no observed effect, 0 confounded" in text
    assert "only in A: swe-agent/gone" in text and "only in B: swe-agent/new" in text
    assert "-5.00%" in text  # 2,000 → 1,900 over the comparable pairs
