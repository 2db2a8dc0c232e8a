"""The proxy and the evaluator agree: a development-set trajectory played through the
gateway endpoint as a client (the official OpenAI SDK, a real Daphne, PostgreSQL, the
wire-protocol server upstream answering with the recorded turns) sends upstream the
same tokens per request, and folds as often and at the same requests, as
``manage.py replay`` computes for it (``runner.evaluate``, in process) with the same
window, output budget, policy, prices and length prior.

The agent profile carries what the replay settings say: ``--window`` is its context
window, ``--output-budget`` its output budget, the policy its eviction policy, and
``--prices openai`` its model's prices (``openai:gpt-4.1``, the replay's representative
OpenAI model). The replay's length prior (the other runs of the same source and model
in the paths given) is, live, the agent's finished sessions: made here with the same
lengths. Budget tuning (``ReplaySettings.budget``) is the hub's ATRIUM_FOLD_* settings,
not a profile's: left at the defaults on both sides.

Both name a result whose call reads no file by the call itself, name and arguments
(``receipts.call_purpose``: ``bash {"command": "cd /testbed && python t.py"}``). What
still differs is a read's path: the client's own (absolute) at the endpoint,
repository-relative in the replay, a few tokens per receipt or note that names one.
Tolerance: 2% per request, raw, the estimator's own noise; the folds must be the same
requests. ``naming_excess`` takes the paths out, and the replay made to name each result
as the endpoint does (its paths too) sends, request for request, exactly the endpoint's
tokens and folds: the decisions are the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import openai
import pytest
from django.utils import timezone

from endpoint.keys import gateway_key_create
from observations.replay.eval import engine
from observations.replay.eval.cost import PRICES
from observations.replay.eval.engine import ReplaySettings, RunResult
from observations.replay.eval.runner import evaluate, length_prior
from observations.replay.load import load_trajectories
from sessions.models import Session, SessionEvent, Task
from sessions.runtime import states
from tests.endpoint.replay_client import (
    Played,
    TrajectoryUpstream,
    named_as_the_endpoint_names_it,
    play,
)
from tests.rooms.factories import make_agent, make_room

pytestmark = pytest.mark.timeout(120)

# The development set beside the repository, as the replay benchmarks find it.
DATA = Path(os.environ.get("ATRIUM_REPLAY_DATA", Path(__file__).resolve().parents[3] / "shared/data/trajectories"))
OUTPUT_BUDGET = 4_096
TOLERANCE = 0.02
# (folder, trajectory, window): native tool calls, no step dropped from the agent's
# history, and a window at which the replay folds but starts no new segment (a new
# segment's prose request is answered by no recorded turn).
# The OpenHands run is kept here whole (the first line of the set's output.jsonl, as
# published), so the check runs wherever the tests do; the other needs the set.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = [
    (DATA / "swe-agent_claude-4-sonnet", "django__django-11880", 32_000),  # 32 requests, 4 folds
    (FIXTURES / "openhands_ponyc-4595", "ponylang__ponyc-4595", 24_000),  # 23 requests, 1 fold
]


def evaluator_run(source: Path, trajectory_id: str, window: int) -> dict:
    """``manage.py replay SOURCE --policy on_demand --window W --prices openai``'s
    per-request figures for the trajectory."""
    results = evaluate([source], policies=["on_demand"], windows=[window],
                       settings=ReplaySettings(output_budget=OUTPUT_BUDGET, cost=PRICES["openai"]))
    found = next(t for t in results.trajectories if t.trajectory_id == trajectory_id)
    return found.requests[("on_demand", window)]


@dataclass
class EndpointRun:
    upstream: TrajectoryUpstream  # what it received, and the sizes
    folds: list[int]  # requests a fold preceded (a fold event's step: the turns before it)
    segments: int
    played: Played


def endpoint_run(source: Path, trajectory_id: str, window: int, owner, hub, *, name: str = "") -> EndpointRun:
    """The trajectory played through the endpoint by an agent profile set up as the
    replay is, with the replay's length prior as finished sessions."""
    loaded = load_trajectories([source]).trajectories
    trajectory = next(t for t in loaded if t.trajectory_id == trajectory_id)
    upstream = TrajectoryUpstream(trajectory)
    try:
        agent = make_agent(f"replayer-{trajectory_id}{name}", "openai:gpt-4.1", base_url=upstream.url + "/v1",
                           api_key="sk-upstream", context_window=window, output_budget=OUTPUT_BUDGET,
                           eviction_policy="on_demand", owner=owner)
        room = make_room(owner, f"Parity {trajectory_id}{name}", agents=[agent])
        _finished_sessions(room, agent, owner, [len(t.steps) for t in loaded if t is not trajectory
                                                and (t.source, t.model) == (trajectory.source, trajectory.model)])
        key = gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name="parity").token
        with openai.OpenAI(base_url=hub.url + "/v1", api_key=key, max_retries=0, timeout=60) as client:
            played = play(trajectory, client, upstream)
    finally:
        upstream.close()
    session = Session.objects.get(origin=Session.Origin.ENDPOINT, agent=agent)
    events = SessionEvent.objects.filter(session=session).order_by("pk")
    return EndpointRun(upstream, [e.payload["step"] for e in events if e.kind == "fold"],
                       sum(1 for e in events if e.kind == "segment.started"), played)


def _finished_sessions(room, agent, owner, lengths: list[int]) -> None:
    """What the live gateway's length prior reads (sessions.selectors.session_lengths):
    the agent's finished sessions on its model, one per other recorded run."""
    now = timezone.now()
    for i, steps in enumerate(lengths):
        task = Task.objects.create(room=room, title=f"earlier {i}", objective="earlier", created_by=owner)
        Session.objects.create(task=task, agent=agent, model=agent.model, state=states.SUCCEEDED, step=steps,
                               created_by=owner, started_at=now - timedelta(hours=1, minutes=i),
                               finished_at=now - timedelta(minutes=i))


@dataclass(frozen=True)
class Agreement:
    raw: list[float]  # |endpoint - replay| / endpoint per request
    explained: list[float]  # the same, the endpoint's read paths taken out


def agreement(expected: list[int], run: EndpointRun) -> Agreement:
    sizes, excess = run.upstream.sizes, run.upstream.excess
    return Agreement(
        raw=[abs(s - e) / s for s, e in zip(sizes, expected, strict=True)],
        explained=[abs(s - x - e) / s for s, x, e in zip(sizes, excess, expected, strict=True)],
    )


def named_replay(source: Path, trajectory_id: str, window: int, monkeypatch) -> RunResult:
    """The replay's run naming each result as the endpoint does (the client's path:
    ``named_as_the_endpoint_names_it``), everything else as ``evaluator_run``."""
    loaded = load_trajectories([source]).trajectories
    trajectory = next(t for t in loaded if t.trajectory_id == trajectory_id)
    with monkeypatch.context() as patched:
        patched.setattr(engine, "observation_input", named_as_the_endpoint_names_it)
        return engine.replay(trajectory, "on_demand", window, ReplaySettings(output_budget=OUTPUT_BUDGET,
                                                                             cost=PRICES["openai"]),
                             prior=length_prior(trajectory, loaded))


@pytest.mark.parametrize(("source", "trajectory_id", "window"), CASES, ids=[c[1] for c in CASES])
def test_a_development_trajectory_through_the_endpoint_matches_the_replay(source, trajectory_id, window,
                                                                          owner, hub, monkeypatch):
    if not source.is_dir():
        pytest.skip(f"no development set at {DATA} (set ATRIUM_REPLAY_DATA)")
    expected = evaluator_run(source, trajectory_id, window)
    run = endpoint_run(source, trajectory_id, window, owner, hub)

    assert expected["segments"] == [] and run.segments == 0
    assert expected["folds"], "a window at which the replay folds"
    assert run.folds == expected["folds"]
    found = agreement(expected["sent"], run)
    first_fold = expected["folds"][0]
    print(f"\n{trajectory_id} at {window:,}: {len(expected['sent'])} requests, folds {run.folds} (replay "
          f"{expected['folds']}); max difference {max(found.raw):.2%} raw, {max(found.explained):.2%} with the "
          f"read paths taken out")
    # Until a receipt stands, the same messages but for the paths: the same tokens.
    named = [size - excess for size, excess in zip(run.upstream.sizes, run.upstream.excess, strict=True)]
    assert named[:first_fold] == expected["sent"][:first_fold]
    assert max(found.raw) <= TOLERANCE
    # Named alike, the two gateways send the same requests: the same folds, the same tokens.
    alike = named_replay(source, trajectory_id, window, monkeypatch)
    assert (alike.folds, alike.sent) == (run.folds, run.upstream.sizes)
