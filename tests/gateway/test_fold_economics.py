"""on_demand folds when it pays (observations/gateway/policies.py, economics.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from observations.gateway.economics import MIN_SAMPLES, CacheEconomics, LengthPrior
from observations.gateway.policies import FoldReason
from observations.gateway.transcript import ObsState
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input

ANTHROPIC = CacheEconomics(cache_read=0.10, cache_write=1.25)
OPENAI = CacheEconomics(cache_read=0.25, cache_write=1.0)
UNCACHED = CacheEconomics(cache_read=1.0, cache_write=1.0)
LONG = LengthPrior.of([200] * 20)  # sessions like this one ran 200 steps
SHORT = LengthPrior.of([7] * 20)


def test_payback_follows_each_providers_prices():
    assert ANTHROPIC.payback_requests(60_000, 20_000) == pytest.approx(11.5 * 3 - 1)
    assert OPENAI.payback_requests(60_000, 20_000) == pytest.approx(3 * 3 - 1)
    assert UNCACHED.payback_requests(60_000, 20_000) == -1  # nothing cached, nothing to break
    assert ANTHROPIC.payback_requests(1_000, 0) == float("inf")
    with pytest.raises(ValueError):
        CacheEconomics(cache_read=0.5, cache_write=0.1)


def test_the_work_ahead_is_the_median_of_what_comparable_sessions_had_left():
    prior = LengthPrior.of([10, 20, 30, 40, 50, 60, 70, 80, 1_000] + [90] * 3)
    assert prior.remaining(25) == 80 - 25  # longer ones: 30..90 and 1,000; their median, not their mean
    # Without enough comparable sessions it leans on "as many again as so far".
    assert LengthPrior().remaining(12) == 12
    few = LengthPrior.of([40, 40])
    assert LengthPrior().remaining(0) == 1
    assert 12 < few.remaining(12) < 28
    assert len([n for n in prior.lengths if n > 25]) >= MIN_SAMPLES


def reads(ctx, steps: int, *, lines: int = 120, start: int = 0):
    boundaries = []
    for n in range(start, start + steps):
        boundaries.append(ctx.prepare())
        ctx.add_assistant(f"step {n}", (call(f"c{n}", path=f"f{n}.py"),))
        ctx.add_tool_result(read_input(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 0, lines)))
    return boundaries


def test_below_the_trigger_a_fold_happens_once_it_pays_and_it_is_time():
    ctx = make_context(window=200_000, output_budget=4_000)
    ctx.length_prior = LONG
    boundaries = reads(ctx, 12)
    folds = [b.fold for b in boundaries if b.fold]
    assert folds and folds[0].reason is FoldReason.COST
    assert all(f.projection_before < ctx.budget.trigger for f in folds)
    first = next(b for b in boundaries if b.fold)
    # Not at the first chance: the read cost carried since the start had to reach the
    # fold's cost (the economic-order rule); the boundaries before say so.
    assert any("carried" in b.plan.note for b in boundaries[: boundaries.index(first)])


def test_no_fold_when_the_work_ahead_is_too_short_to_pay_it_back():
    ctx = make_context(window=200_000, output_budget=4_000, optional_min_freed=0)
    ctx.length_prior = SHORT  # comparable sessions ended after 7 steps
    boundaries = reads(ctx, 7)
    assert all(b.fold is None for b in boundaries)
    assert "pay back only after" in boundaries[-1].plan.note


def test_a_fold_never_takes_what_the_last_two_turns_produced_unless_superseded():
    ctx = make_context(window=200_000, output_budget=4_000)
    ctx.length_prior = LONG
    for b in reads(ctx, 20):
        if b.fold:
            assert all(ctx.observation(i).step < b.fold.step - 1 for i in b.fold.evicted)
    # A read of a file written since is superseded: not kept for the agent any more.
    ctx = make_context(window=200_000, output_budget=4_000)
    ctx.add_assistant("read", (call("r", path="a.py"),))
    read = ctx.add_tool_result(read_input("r", "a.py", file_text("a.py", 0, 100)))
    ctx.add_assistant("write", (call("w", "shell"),))
    written = shell_input("w", "patch a.py", "patched")
    ctx.add_tool_result(type(written)(**{**{f: getattr(written, f) for f in written.__slots__}, "written": ("a.py",)}))
    ctx.add_assistant("next")
    assert read.state is ObsState.CONSUMED and not ctx.view.is_hot(read)


def test_only_the_same_call_made_again_supersedes_a_result():
    """A command run again supersedes its earlier output; an editor's edit of another
    file does not supersede an edit (its "command" is only the subcommand)."""
    ctx = make_context(window=200_000, output_budget=4_000)

    def step(*calls: tuple[str, str, dict, str]) -> list:
        ctx.prepare()
        ctx.add_assistant("go", tuple(call(call_id, tool, **arguments) for call_id, tool, arguments, _ in calls))
        made = []
        for call_id, tool, arguments, text in calls:
            base = shell_input(call_id, "", text)
            made.append(ctx.add_tool_result(replace(base, tool=tool, arguments=arguments)))
        return made

    def edit(call_id: str, path: str) -> tuple[str, str, dict, str]:
        arguments = {"command": "str_replace", "path": path, "old_str": "x", "new_str": "y"}
        return call_id, "str_replace_editor", arguments, f"The file {path} has been edited.\n" * 30

    tests, edit_a = step(("t1", "shell", {"command": "pytest -q"}, "3 failed\n" * 50), edit("e1", "/r/a.py"))
    edit_b, again = step(edit("e2", "/r/b.py"), ("t2", "shell", {"command": "pytest -q"}, "all passed\n" * 50))
    assert tests.step == edit_a.step == again.step - 1 == ctx.step - 1  # all from the last two turns
    assert ctx.view.is_hot(edit_a) and ctx.view.is_hot(edit_b) and ctx.view.is_hot(again)
    assert not ctx.view.is_hot(tests)  # the same command, run again


def test_the_providers_prices_decide_openai_folds_sooner_than_anthropic():
    first = {}
    for name, economics in (("anthropic", ANTHROPIC), ("openai", OPENAI)):
        # The prices alone: no least size of a fold (test_fold_guard.py has that).
        ctx = make_context(window=200_000, output_budget=4_000, optional_min_freed=0)
        ctx.length_prior, ctx.economics = LONG, economics
        boundaries = reads(ctx, 20, lines=60)
        first[name] = next(i for i, b in enumerate(boundaries) if b.fold)
    assert first["openai"] < first["anthropic"]


def test_a_server_without_a_cache_folds_as_soon_as_anything_is_foldable():
    ctx = make_context(window=200_000, output_budget=4_000, optional_min_freed=0)
    ctx.length_prior, ctx.economics = SHORT, UNCACHED
    boundaries = reads(ctx, 6)
    assert [i for i, b in enumerate(boundaries) if b.fold][0] == 3  # results of step 0, once two turns passed


def test_above_the_trigger_a_fold_that_does_not_pay_waits_and_the_ceiling_forces_it():
    ctx = make_context(window=40_000, output_budget=1_000, segment_ratio=0.95)
    ctx.add_user("pinned context " * 5_000, kind="note", pinned=True)  # kept by any fold
    ctx.length_prior = LengthPrior.of([10_000] * 20)
    n = 0
    while ctx.projection() <= ctx.budget.trigger:
        ctx.length_prior = LengthPrior.of([ctx.step + 3] * 20)  # by the prior, little is left
        reads(ctx, 1, lines=40, start=n)
        n += 1
    ctx.length_prior = LengthPrior.of([ctx.step + 2] * 20)
    waiting = ctx.prepare()
    assert waiting.fold is None and "pay back only after" in waiting.plan.note
    while ctx.projection() <= ctx.budget.ceiling:
        ctx.add_assistant(f"more {n}", (call(f"c{n}", path="x.py"),))
        ctx.add_tool_result(read_input(f"c{n}", f"g{n}.py", file_text(f"g{n}.py", 0, 200)))
        n += 1
    forced = ctx.prepare()
    assert forced.fold is not None and forced.fold.reason is FoldReason.CEILING
    assert forced.fold.projection_after <= ctx.budget.target or forced.fold.tokens_freed >= ctx.budget.min_freed
    assert list(forced.fold.evicted) == sorted(forced.fold.evicted)  # oldest first


def test_a_waiting_person_postpones_a_due_fold_at_most_the_configured_times():
    ctx = make_context(window=200_000, output_budget=4_000, max_postponements=2)
    ctx.length_prior = LONG
    boundaries = reads(ctx, 30)
    due_at = next(i for i, b in enumerate(boundaries) if b.fold)
    ctx = make_context(window=200_000, output_budget=4_000, max_postponements=2)
    ctx.length_prior = LONG
    reads(ctx, due_at)
    first, second, third = (ctx.prepare(person_waiting=True) for _ in range(3))
    assert first.postponed and second.postponed
    assert third.fold is not None and third.fold.postponements == 2
