"""Benchmark: the endpoint/replay parity check (tests/endpoint/test_replay_parity.py)
over every development-set trajectory a client can play as recorded (native tool calls,
no step dropped from the agent's history) at windows from 16k to 64k tokens; a window at
which the replay starts a new segment is skipped (its prose request has no recorded
answer). Prints per trajectory and window the folds of the replay, of the replay naming
each result as the endpoint does (``named_as_the_endpoint_names_it``: the client's read
paths) and of the endpoint, and the largest per-request token difference, raw and with
the read paths taken out.

Both name a result by its call (``receipts.call_purpose``); only a read's path differs
(test_replay_parity.py says how), a few tokens that could still move a fold. So: the
endpoint must fold at the same requests as the replay that names results as it does, in
every run; and where it also folds where the plain replay does, the tokens must agree
within TOLERANCE, and everywhere with the replay that names results as it does.

Run (PostgreSQL and Redis as for the tests): DATABASE_URL=... REDIS_URL=...
.venv/bin/pytest -m bench tests/bench/test_gateway_endpoint_parity.py -s
(ATRIUM_REPLAY_DATA overrides the data folder). About 10 s per trajectory and window.
"""

from __future__ import annotations

import pytest

from observations.replay.load import load_trajectories
from tests.endpoint.conftest import hub, owner  # noqa: F401
from tests.endpoint.test_replay_parity import (
    DATA,
    TOLERANCE,
    agreement,
    endpoint_run,
    evaluator_run,
    named_replay,
)

FOLDERS = ("swe-agent_claude-4-sonnet", "openhands_multi-swe-bench")
WINDOWS = (16_000, 24_000, 32_000, 64_000)


@pytest.mark.bench
@pytest.mark.timeout(1800)
def test_every_playable_trajectory_through_the_endpoint_matches_the_replay(owner, hub, monkeypatch):  # noqa: F811
    if not DATA.is_dir():
        pytest.skip(f"no development set at {DATA} (set ATRIUM_REPLAY_DATA)")
    print("\ntrajectory | window | requests | folds: replay / replay named as the endpoint / endpoint | "
          "max difference raw / paths out / against the replay named as the endpoint")
    same, moved, apart = [], 0, 0  # same: max difference, raw, per run
    worst_named = 0.0  # against the replay that names results as the endpoint does
    for folder in FOLDERS:
        for trajectory in load_trajectories([DATA / folder]).trajectories:
            if not all(step.kept_in_history for step in trajectory.steps) or any(
                    event.call_in_text for step in trajectory.steps for event in step.events):
                print(f"{trajectory.trajectory_id} | skipped: a step dropped from its history or a call in text")
                continue
            for window in WINDOWS:
                expected = evaluator_run(DATA / folder, trajectory.trajectory_id, window)
                if expected["segments"]:
                    print(f"{trajectory.trajectory_id} | {window:,} | skipped: the replay starts a new segment")
                    continue
                named = named_replay(DATA / folder, trajectory.trajectory_id, window, monkeypatch)
                run = endpoint_run(DATA / folder, trajectory.trajectory_id, window, owner, hub, name=f"-{window}")
                row = f"{trajectory.trajectory_id} | {window:,} | {len(expected['sent'])} | " \
                      f"{expected['folds']} / {named.folds} / {run.folds}"
                if run.segments or named.segments:
                    # The endpoint reached a new segment, whose handoff prose here is a
                    # recorded turn, not the replay's stand-in.
                    print(f"{row} | new segment at request {named.segments} (named) / {run.segments} (endpoint)")
                    assert bool(run.segments) == bool(named.segments)
                    apart += 1
                    continue
                assert run.folds == named.folds
                found = agreement(expected["sent"], run)
                alike = max(abs(s - n) / s for s, n in zip(run.upstream.sizes, named.sent, strict=True))
                print(f"{row} | {max(found.raw):.2%} / {max(found.explained):.2%} / {alike:.2%}")
                worst_named = max(worst_named, alike)
                if run.folds == expected["folds"]:
                    same.append(max(found.raw))
                else:
                    moved += 1
    print(f"{len(same) + moved + apart} runs, the endpoint folding where the replay naming results as it does "
          f"folds in all; where the plain replay folds too in {len(same)} (largest difference, raw, "
          f"{max(same, default=0):.2%}); a fold one or two requests later in {moved}; a new segment in {apart}; "
          f"largest difference against the replay naming results as the endpoint does {worst_named:.2%}")
    assert same and max(same) <= TOLERANCE and worst_named <= TOLERANCE
