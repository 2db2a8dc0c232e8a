"""Benchmark: what one gateway request costs the hub itself, in statements and CPU, at
step 10 and step 300 of a conversation: ``endpoint.sessions.proxied_turn`` called in
process (no Daphne, no HTTP client on the hub's side), against the local
wire-protocol upstream, each request a tool result of about 2.4 KB more.

Run: .venv/bin/pytest -m bench tests/bench/test_gateway_step_cost.py -s -n0 (with
DATABASE_URL set for PostgreSQL). Prints, around each of the two steps, the median of
five requests: statements (transaction control left out), transactions, the process's
CPU time (``time.process_time``: the upstream's serving thread is in this process too,
parsing each request's history) and the hub's own, this thread's (``time.thread_time``).
Issue 26's goal for a step: 12 statements in one transaction and 15 ms of CPU.

On the 2-core development box, this change against the code before it (a worktree of
the previous commit, run right before):

| step | statements | CPU ms before | CPU ms now | now / before |
|--:|--:|--:|--:|--:|
| 10 | 31 → 15 | 27.0 | 14.5 | 0.54 |
| 300 | 31 → 15 | 58.0 | 26.3 | 0.45 |

15 statements in 1 transaction at a step that folds: 13 for the request itself, plus the
fold's row and the calibration the fold's next reported count re-learns. Since the
saved state's newest record (whether the context kept in memory is current) is read
with the session's row, not in a statement of its own: 12 for the request itself
(median; the rare steps that fold, 14). The session is read in a statement of its
own after the conversation's lock (joined to the lock's statement, a request that
waited for the lock would see the counts and chat cursor from before the request it
waited for). What went: the unit's rows read before they
were written (now one INSERT … ON CONFLICT per kind of row), the event seq's UPDATE and
SELECT (one UPDATE … RETURNING that saves the session's columns too), the state read in
two queries, four queries for the boundary's inputs (one now, the rest when something
waits), the calibration and the finished sessions' lengths on every request (kept by
the process). The CPU at step 300:
the session's context is kept in memory between its requests (endpoint/hot.py), not
restored from its state with every message rendered again.

Since the boundary's question of what waits is one statement written out (the ORM's
three ``Exists`` took some 2 ms to build and compile), a call's arguments are rendered
for the upstream once per call, and a request that delivers nothing builds no query to
deliver it: hub thread CPU, three runs each alternating with a worktree of the commit
before, 14.6 → 12.3 ms at step 10 (0.84) and 20.7 → 18.8 ms at step 300 (0.91); this
box ran the same code twice as fast as the box of the figures above.

Since the session and the conversation's lock are read by statements written out
(tests/bench/test_written_out_reads.py) and a conversation's next request takes the
digests its last history made (endpoint/hot.py): hub thread CPU, three runs each
alternating with a worktree of f663779, on a box that ran the code before at 26.6 /
47.4 ms (about 2.2 times as slow as the last one): 26.6 → 20.3 ms at step 10 (0.76) and
47.4 → 36.0 ms at step 300 (0.76).

The slowest request from step 10 on is printed too: before, a full collection of the
garbage collector walking the process's objects (some 350,000 in this one), or a
snapshot of the saved state syncing every row of the session. The bench freezes its
startup objects as a hub's processes now do (hub/gc_freeze.py), and a snapshot syncs
only what its unit touched: two runs alternating with a worktree of 0882c30, 284 and
338 ms → 45.5 and 44.6 ms (at step 303, a snapshot's request). The medians moved
within the runs' noise: at step 10 12.9 and 13.5 → 12.2 and 12.1 ms, at step 300 18.8
and 17.3 → 20.3 and 21.8 ms (in an earlier pair of runs 27.3 and 26.9 → 22.6 and 22.9).

The conversation is one the hub routes, as a client that does not name its own (an
``s:`` conversation): the one a client named before skipped the routing, whose look-up
read every answer of the history with its conversation's digests, 29 ms at step 300.
Two runs each alternating with a worktree of 063669f (its bench routed too), on a box
about twice as fast as the last, the routing's look-up alone: 9.0 and 10.4 → 8.3 and
8.5 ms at step 10, 44.9 and 46.9 → 13.1 and 13.1 ms at step 300; with the unit's rows
INSERTs written out too (observations/inserts.py), 7.7 and 8.6 ms, and 11.6 and 11.8;
13 statements, the routing's before the transaction.
"""

from __future__ import annotations

import json
import statistics
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from endpoint.formats import FORMATS
from endpoint.models import GatewayKey
from endpoint.sessions import proxied_turn
from hub.gc_freeze import freeze_startup_objects
from tests.endpoint.conftest import owner, setup, wire  # noqa: F401
from tests.endpoint.test_sessions import FILE, TOOLS, completion

STEPS = (10, 300)
AROUND = 5  # requests measured at each step


@pytest.mark.bench
@pytest.mark.timeout(1800)
def test_a_gateway_requests_cost_to_the_hub_at_step_10_and_300(setup, wire):  # noqa: F811
    freeze_startup_objects()  # as a hub's processes do once started
    key = GatewayKey.objects.get(agent__name="gpt")
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    measured: dict[int, list[tuple[int, int, float, float]]] = {step: [] for step in STEPS}
    slowest = (0.0, 0)  # hub thread CPU ms, step: past the first steps, a snapshot's request
    for n in range(max(STEPS) + AROUND):
        wire.reply("/v1/chat/completions",
                   json_body=completion(text=f"Step {n}.", call=("read_file", {"path": f"src/m{n}.py"}), n=n))
        request = FORMATS["openai"].request({"model": "m", "messages": messages, "tools": TOOLS}, "gpt-4.1")
        connection.queries_log.clear()  # it keeps 9,000: the capture's window would slide past
        started, started_here = time.process_time(), time.thread_time()
        with CaptureQueriesContext(connection) as queries:
            turn = proxied_turn(key=key, conversation="s:bench", request=request)
        cpu, here = (time.process_time() - started) * 1000, (time.thread_time() - started_here) * 1000
        if n >= min(STEPS):
            slowest = max(slowest, (here, n))
        for step in STEPS:
            if step <= n < step + AROUND:
                sql = [q["sql"] for q in queries.captured_queries]
                statements = [s for s in sql if not s.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))]
                measured[step].append((len(statements), sum(s == "BEGIN" for s in sql), cpu, here))
        call = turn.tool_calls[0]
        messages += [{"role": "assistant", "content": turn.text, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
            {"role": "tool", "tool_call_id": call.id, "content": f"{FILE}# {n}\n"}]
    print("\nstep | statements | transactions | process CPU ms | hub thread CPU ms (medians of 5)")
    for step, samples in measured.items():
        print(f"{step:4d} | {statistics.median(s[0] for s in samples):10.0f} | "
              f"{statistics.median(s[1] for s in samples):12.0f} | {statistics.median(s[2] for s in samples):14.1f} | "
              f"{statistics.median(s[3] for s in samples):17.1f}")
    print(f"slowest request from step {min(STEPS)} on: {slowest[0]:.1f} ms of hub thread CPU, at step {slowest[1]}")
