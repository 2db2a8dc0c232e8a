"""Benchmark: one step boundary's decision vs session length.

Run: .venv/bin/pytest -m bench tests/bench/test_gateway_boundary.py -s
Prints median and p95 per size and the growth factor against the 100-observation
baseline measured in the same run. The window is sized so the session sits in its
steady state (folding every so often), which is where the decision costs most. The
cost-driven decision is set beside the trigger-only rule it replaced (a fold is due
only above 80%), measured in the same run on the same sessions.
"""

from __future__ import annotations

import statistics
import time

import pytest

from observations.gateway.economics import LengthPrior
from observations.gateway.policies import OnDemand
from tests.gateway.factories import call, make_context, shell_input


class TriggerOnly(OnDemand):
    """The rule before cost-driven folds: nothing happens under the trigger."""

    def _due(self, ctx, projection):
        if projection <= ctx.budget.trigger:
            return [], None, "under trigger"
        return super()._due(ctx, projection)

SIZES = (100, 1_000, 10_000)
SAMPLES = 300


def session_with(observations: int, policy=None):
    # ~530 tokens per result, ~100 per step that no fold removes (assistant turn and
    # receipt): the window holds those for the whole run and folds the rest now and then.
    window = max(660 * observations, 400 * (observations + SAMPLES))
    ctx = make_context(window=window, output_budget=4_000, min_freed_tokens=window // 8, segment_ratio=1.0)
    ctx.length_prior = LengthPrior.of([2 * (observations + SAMPLES)] * 20)
    if policy is not None:
        ctx.policy = policy
    for n in range(observations):
        ctx.prepare()
        ctx.add_assistant(f"step {n}", (call(f"c{n}", "shell"),))
        ctx.add_tool_result(shell_input(f"c{n}", f"cat log{n}", f"line {n} of the build output\n" * 80))
    return ctx


def measure(ctx, samples: int) -> tuple[list[float], list[float]]:
    decide, prepare = [], []
    for n in range(samples):
        start = time.perf_counter()
        ctx.policy.plan(ctx.view, person_waiting=False, overflow=False)
        decide.append(time.perf_counter() - start)
        start = time.perf_counter()
        ctx.prepare()
        prepare.append(time.perf_counter() - start)
        ctx.add_assistant(f"more {n}", (call(f"m{n}", "shell"),))
        ctx.add_tool_result(shell_input(f"m{n}", "cat more", f"line {n} of more build output\n" * 80))
    return decide, prepare


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95) - 1]


@pytest.mark.bench
def test_boundary_decision_scales_linearly_or_better():
    rows = {}
    for size in SIZES:
        ctx = session_with(size)
        decide, prepare = measure(ctx, SAMPLES)
        _, before = measure(session_with(size, TriggerOnly()), SAMPLES)
        rows[size] = (statistics.median(decide), p95(decide), statistics.median(prepare), p95(prepare), len(ctx.folds),
                      statistics.median(before))
    base = rows[SIZES[0]]
    print("\nobservations | decide median | decide p95 | prepare median | prepare p95 | folds | growth vs 100"
          " | trigger-only prepare | cost-driven ÷ trigger-only")
    for size, (dm, dp, pm, pp, folds, bm) in rows.items():
        print(f"{size:>12,} | {dm * 1e6:>10.1f} µs | {dp * 1e6:>7.1f} µs | {pm * 1e6:>11.1f} µs | {pp * 1e6:>8.1f} µs"
              f" | {folds:>5} | ×{pm / base[2]:.1f} | {bm * 1e6:>10.1f} µs | ×{pm / bm:.2f}")
    growth = rows[SIZES[-1]][2] / base[2]
    size_ratio = SIZES[-1] / SIZES[0]
    print(f"100× more observations → prepare ×{growth:.1f} (quadratic would be ×{size_ratio ** 2:,.0f})")
    assert growth < size_ratio * 3, "boundary cost grows faster than linearly"
