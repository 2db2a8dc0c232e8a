"""The on_demand rules the replay tuning changed (observations/gateway/policies.py):
a due fold must pay back within the work done so far, and may stop short of the target."""

from __future__ import annotations

import pytest

from observations.gateway.policies import FoldReason, payback_requests
from tests.gateway.factories import call, file_text, make_context, read_input


def test_payback_is_eleven_and_a_half_times_kept_over_freed_minus_one():
    assert payback_requests(rewritten=60_000, freed=20_000) == pytest.approx(33.5)
    assert payback_requests(rewritten=30_000, freed=50_000) == pytest.approx(5.9)
    assert payback_requests(rewritten=1_000, freed=0) == float("inf")


def read_step(ctx, n: int, lines: int, *, thought: str = ""):
    boundary = ctx.prepare()
    ctx.add_assistant(thought or f"step {n}", (call(f"c{n}", path=f"f{n}.py"),))
    ctx.add_tool_result(read_input(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 0, lines)))
    return boundary


def test_a_due_fold_that_would_not_pay_back_waits_for_the_ceiling():
    # One big early result, then a long answer nothing may evict: folding the result
    # re-sends the long answer as a cache write for a small saving per request. (A
    # segment share above what the answer takes, so that folds, not a reset, decide.)
    ctx = make_context(window=40_000, output_budget=1_000, segment_ratio=0.9)
    read_step(ctx, 0, 220)
    read_step(ctx, 1, 5, thought="a long plan, kept verbatim " * 4_500)
    n = 2
    while ctx.projection() <= ctx.budget.trigger:
        read_step(ctx, n, 5)
        n += 1
    waiting = ctx.prepare()
    assert ctx.budget.trigger < waiting.projection <= ctx.budget.ceiling
    assert waiting.fold is None
    assert "would pay back only after" in waiting.plan.note
    while ctx.projection() <= ctx.budget.ceiling:
        ctx.add_assistant(f"more {n}", (call(f"c{n}", path="x.py"),))
        ctx.add_tool_result(read_input(f"c{n}", f"g{n}.py", file_text(f"g{n}.py", 0, 40)))
        n += 1
    forced = ctx.prepare()
    assert forced.fold is not None and forced.fold.reason is FoldReason.CEILING


def test_a_due_fold_that_frees_a_large_chunk_happens_even_short_of_the_target():
    # A large pinned note stays a cache read; the results after it are worth folding
    # although the note alone keeps the projection above the 30% target.
    ctx = make_context(window=40_000, output_budget=1_000)
    ctx.add_user("pinned context " * 5_200, kind="note", pinned=True)
    boundaries = []
    n = 0
    while not any(b.fold for b in boundaries):
        boundaries.append(read_step(ctx, n, 60))
        n += 1
        assert n < 100
    fold = boundaries[-1].fold
    assert fold.reason is FoldReason.TRIGGER
    assert fold.projection_after > ctx.budget.target
    assert fold.tokens_freed >= ctx.budget.min_freed
