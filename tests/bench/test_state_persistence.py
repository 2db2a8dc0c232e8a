"""Benchmark: what one unit's commit costs to persist the gateway state, by session length.

Run: .venv/bin/pytest -m bench tests/bench/test_state_persistence.py -s
(with DATABASE_URL pointing at PostgreSQL to measure it there)

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

import os
import statistics
import time

import pytest
from django.db import transaction

from observations.gateway.economics import LengthPrior
from observations.gateway.journal import StateJournal, encode
from observations.gateway.state import dump_state
from sessions.ledger.state_store import gateway_state_read, gateway_state_save
from sessions.ledger.sync import observations_sync
from sessions.models import Session, Task
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input
from tests.rooms.factories import make_agent, make_room, make_user

SIZES = tuple(int(s) for s in os.environ.get("BENCH_SIZES", "100,1000,5000").split(","))
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


def save_new(session, journal, ctx) -> tuple[int, object]:
    with transaction.atomic():
        Session.objects.select_for_update().defer(*Session.STATE_FIELDS).get(pk=session.pk)
        record = journal.record(ctx)
        gateway_state_save(session=session, record=record)
        Session.objects.filter(pk=session.pk).update(step=ctx.step)
    return record.size, record


def save_old(session, ctx) -> tuple[int, None]:
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        state = dump_state(ctx)
        locked.gateway_state, locked.step = state, ctx.step
        locked.save(update_fields=["gateway_state", "step"])
    return len(encode(state).encode()), None


def timed(action, *args, **kwargs):
    start = time.perf_counter()
    result = action(*args, **kwargs)
    return time.perf_counter() - start, result


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
        amortized = []  # (seconds, bytes) of every unit's state save, snapshots included
        began = time.perf_counter()
        for n in range(size):
            unit(ctx, n)
            elapsed, (written, _) = timed(save_new, session, journal, ctx)
            amortized.append((elapsed, written))
        print(f"\n{size} steps run in {time.perf_counter() - began:.1f} s")
        observations_sync(session=session, ctx=ctx)  # the rows of the run so far, untimed
        new = []  # (state seconds, bytes, sync seconds)
        for n in range(size, size + SAMPLES_NEW):
            unit(ctx, n)
            elapsed, (written, record) = timed(save_new, session, journal, ctx)
            synced, _ = timed(observations_sync, session=session, ctx=ctx, touched=record.touched)
            new.append((elapsed, written, synced))
            amortized.append((elapsed, written))
        # The saved records read back to exactly the state a whole dump gives.
        assert gateway_state_read(session).state == dump_state(ctx)
        old = []
        for n in range(size + SAMPLES_NEW, size + SAMPLES_NEW + SAMPLES_OLD):
            unit(ctx, n)
            elapsed, (written, _) = timed(save_old, session, ctx)
            synced, _ = timed(observations_sync, session=session, ctx=ctx)
            old.append((elapsed, written, synced))
        rows.append((size, len(ctx.folds), _medians(new), _means(amortized), _medians(old)))

    base_time = rows[0][2][0]
    print("\nsteps | folds | state ms: new / old / ratio | bytes: new / old / ratio | amortized new ms, bytes | "
          "rows sync ms: new / old / ratio | new state ms vs 100 steps")
    for size, folds, (new_t, new_b, new_s), (am_t, am_b), (old_t, old_b, old_s) in rows:
        print(f"{size:>5} | {folds:>5} | {new_t * 1e3:7.2f} / {old_t * 1e3:8.2f} / {old_t / new_t:6.1f}x | "
              f"{new_b:>7,.0f} / {old_b:>10,.0f} / {old_b / new_b:6.1f}x | {am_t * 1e3:6.2f}, {am_b:>7,.0f} | "
              f"{new_s * 1e3:7.2f} / {old_s * 1e3:8.2f} / {old_s / new_s:6.1f}x | {new_t / base_time:5.2f}x")
    assert rows[-1][2][0] < 2 * base_time, "a unit's save at 5,000 steps must cost within 2x of one at 100"


def _medians(samples):
    return tuple(statistics.median(column) for column in zip(*samples, strict=True))


def _means(samples):
    return tuple(statistics.mean(column) for column in zip(*samples, strict=True))
