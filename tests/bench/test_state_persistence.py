"""Benchmark: what one unit's commit costs to persist the gateway state, by session length.

Run: .venv/bin/pytest -m bench tests/bench/test_state_persistence.py -s
(against PostgreSQL: /work/wt/run-tests.sh -m bench tests/bench/test_state_persistence.py -s)

A session runs N steps in its steady state (folding now and then, one segment) while
every unit is saved the new way (a journal delta, a snapshot now and then, rows synced
for what the unit touched), each unit committed in its own transaction as the worker
does. Then, at N steps, the next units are timed both ways on the same session:

- new: StateJournal.record + StateRecord insert + observations_sync of the touched rows;
- old: dump_state rewritten into Session.gateway_state + observations_sync of everything,
  as before issue 15.

Printed per N: median ms per unit and bytes written per unit, each way, their ratio,
and the new way's cost against its own cost at 100 steps (target: within 2x at 5,000).
"new amortized" is the mean over every unit of the run, snapshots included.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.db import transaction

from agents.models import Session, Task
from observations.gateway.economics import LengthPrior
from observations.gateway.journal import StateJournal, encode
from observations.gateway.state import dump_state
from observations.services import observations_sync
from observations.state_store import gateway_state_read, gateway_state_save
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input
from tests.rooms.factories import make_agent, make_room, make_user

SIZES = (100, 1_000, 5_000)
SAMPLES_NEW = 40
SAMPLES_OLD = 8


def unit(ctx, n: int) -> None:
    ctx.prepare()
    ctx.record_usage(round(ctx.estimate * 1.05))
    path = f"src/m{n % 40}.py"
    ctx.add_assistant(f"step {n}: look at {path}", (call(f"r{n}", path=path), call(f"s{n}", "shell")))
    ctx.add_tool_result(read_input(f"r{n}", path, file_text(path, n // 40, 30)))
    ctx.add_tool_result(shell_input(f"s{n}", "pytest -q", f"line {n} of the build output\n" * 40))


def context_for(steps: int):
    # ~900 tokens per step, of which a fold removes most: the window holds the whole
    # run's receipts and folds every so often, like session_with in test_gateway_boundary.
    total = steps + SAMPLES_NEW + SAMPLES_OLD + 10
    window = 400 * total + 40_000
    ctx = make_context(window=window, output_budget=4_000, min_freed_tokens=window // 8, segment_ratio=1.0)
    ctx.length_prior = LengthPrior.of([2 * total] * 20)
    ctx.add_user("Fix it.", kind="task")
    return ctx


def save_new(session, journal, ctx) -> int:
    with transaction.atomic():
        Session.objects.select_for_update().defer(*Session.STATE_FIELDS).get(pk=session.pk)
        record = journal.record(ctx)
        gateway_state_save(session=session, record=record)
        Session.objects.filter(pk=session.pk).update(step=ctx.step)
        observations_sync(session=session, ctx=ctx, touched=record.touched)
    return record.size


def save_old(session, ctx) -> int:
    with transaction.atomic():
        locked = Session.objects.select_for_update().select_related("task").get(pk=session.pk)
        state = dump_state(ctx)
        locked.gateway_state, locked.step = state, ctx.step
        locked.save(update_fields=["gateway_state", "step"])
        observations_sync(session=locked, ctx=ctx)
    return len(encode(state).encode())


def timed(save, *args) -> tuple[float, int]:
    start = time.perf_counter()
    written = save(*args)
    return time.perf_counter() - start, written


@pytest.mark.bench
@pytest.mark.django_db(transaction=True)
def test_a_units_commit_costs_about_the_same_at_5000_steps_as_at_100():
    owner = make_user("olga")
    agent = make_agent("fixer")
    room = make_room(owner, "Bench room", agents=[agent])
    rows = []
    for size in SIZES:
        task = Task.objects.create(room=room, title=f"{size} steps", objective="Fix it", created_by=owner)
        session = Session.objects.select_related("task").get(
            pk=Session.objects.create(task=task, agent=agent).pk)
        ctx, journal = context_for(size), StateJournal()
        all_times, all_bytes = [], []
        for n in range(size):
            unit(ctx, n)
            elapsed, written = timed(save_new, session, journal, ctx)
            all_times.append(elapsed)
            all_bytes.append(written)
        new_times, new_bytes = [], []
        for n in range(size, size + SAMPLES_NEW):
            unit(ctx, n)
            elapsed, written = timed(save_new, session, journal, ctx)
            new_times.append(elapsed)
            new_bytes.append(written)
        all_times += new_times
        all_bytes += new_bytes
        # The saved records read back to exactly the state a whole dump gives.
        assert gateway_state_read(session).state == dump_state(ctx)
        old_times, old_bytes = [], []
        for n in range(size + SAMPLES_NEW, size + SAMPLES_NEW + SAMPLES_OLD):
            unit(ctx, n)
            elapsed, written = timed(save_old, session, ctx)
            old_times.append(elapsed)
            old_bytes.append(written)
        rows.append((size, statistics.median(new_times), statistics.mean(new_bytes), statistics.mean(all_times),
                     statistics.mean(all_bytes), statistics.median(old_times), statistics.mean(old_bytes),
                     len(ctx.folds)))

    base = rows[0][1]
    print("\nsteps | folds | new ms/unit | new bytes/unit | new amortized ms | new amortized bytes | "
          "old ms/unit | old bytes/unit | old/new time | old/new bytes | new vs 100 steps")
    for size, new_t, new_b, amort_t, amort_b, old_t, old_b, folds in rows:
        print(f"{size:>5} | {folds:>5} | {new_t * 1000:>11.2f} | {new_b:>14,.0f} | {amort_t * 1000:>16.2f} | "
              f"{amort_b:>19,.0f} | {old_t * 1000:>11.2f} | {old_b:>14,.0f} | {old_t / new_t:>12.1f}x | "
              f"{old_b / new_b:>13.1f}x | {new_t / base:>15.2f}x")
    assert rows[-1][1] < 2 * base, "a unit's commit at 5,000 steps must cost within 2x of one at 100"
