"""The working-set guard of on_demand's optional folds (policies.OnDemand, view.working_set):
the current text of files the agent still works on stays, and a fold frees enough."""

from __future__ import annotations

from dataclasses import replace

from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.transcript import ObsState
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input

UNCACHED = CacheEconomics(cache_read=1.0, cache_write=1.0)  # any fold pays at once
BODY = "".join(f"def handler_{n}(request):\n    return respond(request, code={n})\n\n" for n in range(40))


def guarded_context(**budget):
    ctx = make_context(window=200_000, output_budget=4_000, **budget)
    ctx.length_prior, ctx.economics = LengthPrior.of([7] * 20), UNCACHED
    return ctx


def read(ctx, path: str, n: int, lines: int = 120):
    ctx.add_assistant(f"reading {path}", (call(f"c{n}", path=path),))
    return ctx.add_tool_result(read_input(f"c{n}", path, file_text(path, n, lines)))


def test_an_optional_fold_waits_until_it_frees_the_least_a_fold_should():
    ctx = guarded_context()
    least = ctx.budget.optional_fold_min
    assert least == ctx.budget.min_freed == 16_000
    boundaries = []
    for n in range(40):
        boundaries.append(ctx.prepare())
        read(ctx, f"f{n}.py", n)
    first = next(b for b in boundaries if b.fold)
    assert first.fold.tokens_freed >= least
    assert "less than 16,000" in boundaries[boundaries.index(first) - 1].plan.note
    # Without it, the same session folds as soon as two turns have passed.
    ungated = guarded_context(optional_min_freed=0)
    folds = []
    for n in range(6):
        folds.append(ungated.prepare().fold)
        read(ungated, f"f{n}.py", n)
    assert folds[3] is not None and folds[3].tokens_freed < least


def test_a_fold_leaves_the_newest_read_and_later_bodies_of_a_file_the_agent_still_works_on():
    ctx = guarded_context(optional_min_freed=0)
    ctx.prepare()
    old_read = read(ctx, "src/app.py", 0)
    ctx.prepare()
    ctx.add_assistant("rewriting it", (call("w", "write_file", path="src/app.py", content=BODY),))
    ctx.add_tool_result(replace(shell_input("w", "write_file src/app.py", "wrote src/app.py"), written=("src/app.py",)))
    (body,) = ctx.payloads
    for n in range(1, 8):
        boundary = ctx.prepare()
        read(ctx, f"f{n}.py", n)
    assert boundary.fold is not None and ctx.observations[2].state is ObsState.RECEIPTED  # f1.py went
    assert old_read.state is ObsState.CONSUMED and body.state is ObsState.CONSUMED

    # A newer read of the file supersedes the older read and the body before it ...
    ctx.prepare()
    new_read = read(ctx, "src/app.py", 8)
    for n in range(9, 12):
        ctx.prepare()
        read(ctx, f"f{n}.py", n)
    assert old_read.state is ObsState.RECEIPTED and body.state is ObsState.RECEIPTED
    assert new_read.state is ObsState.CONSUMED
    # ... and once the agent has left the file alone for working_set_steps, it may go too.
    for n in range(12, 12 + ctx.budget.working_set_steps):
        ctx.prepare()
        read(ctx, f"f{n}.py", n)
    assert new_read.state is ObsState.RECEIPTED


def test_with_the_guard_off_the_files_current_text_folds_like_anything_else():
    ctx = guarded_context(optional_min_freed=0, working_set_steps=0)
    ctx.prepare()
    first = read(ctx, "src/app.py", 0)
    ctx.prepare()
    ctx.add_assistant("rewriting it", (call("w", "write_file", path="src/app.py", content=BODY),))
    ctx.add_tool_result(replace(shell_input("w", "write_file src/app.py", "wrote src/app.py"), written=("src/app.py",)))
    for n in range(1, 5):
        ctx.prepare()
        read(ctx, f"f{n}.py", n)
    assert first.state is ObsState.RECEIPTED and ctx.payloads[0].state is ObsState.RECEIPTED


def test_a_whole_new_body_supersedes_the_bodies_written_before_it():
    ctx = guarded_context(optional_min_freed=0)
    bodies = []
    for n, content in enumerate((BODY, BODY.replace("respond", "answer"))):
        ctx.prepare()
        ctx.add_assistant("writing", (call(f"w{n}", "write_file", path="src/new.py", content=content),))
        ctx.add_tool_result(replace(shell_input(f"w{n}", "write_file", "ok"), written=("src/new.py",)))
        bodies.append(ctx.payloads[-1])
    for n in range(4):
        ctx.prepare()
        read(ctx, f"f{n}.py", n)
    assert bodies[0].state is ObsState.RECEIPTED and bodies[1].state is ObsState.CONSUMED
