"""Replay a set of trajectory files under every policy and window asked for."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from typing import Any

from observations.gateway import policies as gateway_policies
from observations.gateway import tokens
from observations.gateway.budget import Budget
from observations.gateway.economics import LengthPrior
from observations.replay.eval.calibration import FULL_HISTORY_SOURCES, estimator_error
from observations.replay.eval.cost import PRICES
from observations.replay.eval.engine import ReplaySettings, replay, replayable
from observations.replay.eval.oracle import LIMITS
from observations.replay.eval.results import ResultSet, TrajectoryResult, fingerprint
from observations.replay.eval.summary import BASELINE
from observations.replay.load import load_trajectories
from observations.replay.trajectory import Trajectory

# Called once per trajectory replayed under every policy and window.
Progress = Callable[[Trajectory], None]

_ESTIMATOR_CONSTANTS = (
    "WORD_PPM",
    "LONG_RUN_PPM",
    "DIGIT_PPM",
    "SPACE_PPM",
    "NEWLINE_PPM",
    "OTHER_PPM",
    "MESSAGE_OVERHEAD",
)


def with_baseline(policies: Sequence[str]) -> list[str]:
    """The policies in order, `none` first: every ratio is taken against it."""
    unknown = [p for p in policies if p not in replayable()]
    if unknown:
        raise ValueError(f"unknown policy {', '.join(unknown)}: use {', '.join(replayable())}")
    return [BASELINE] + [p for p in dict.fromkeys(policies) if p != BASELINE]


def settings_json(
    settings: ReplaySettings, paths: Iterable[str | os.PathLike[str]]
) -> dict[str, Any]:
    """What produced a result set. `compare` treats differences in the measurement
    (output budget, prices, estimator) as confounders; gateway defaults are the
    treatment and recorded for the record."""
    defaults = {
        f.name: f.default for f in fields(Budget) if f.name not in ("window", "output_budget")
    }
    defaults.update(dict(settings.budget))
    return {
        "paths": [str(p) for p in paths],
        "prices": next((name for name, model in PRICES.items() if model == settings.cost), "custom"),
        "output_budget": settings.output_budget,
        "cost": settings.cost.to_json(),
        "estimator": {name: getattr(tokens, name) for name in _ESTIMATOR_CONSTANTS},
        "gateway": {**defaults, "MIN_GAIN_TOKENS": gateway_policies.MIN_GAIN_TOKENS},
    }


def evaluate(
    paths: Sequence[str | os.PathLike[str]],
    *,
    policies: Sequence[str],
    windows: Sequence[int],
    settings: ReplaySettings | None = None,
    on_loaded: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> ResultSet:
    settings = settings or ReplaySettings()
    policies = with_baseline(policies)
    loaded = load_trajectories(paths)
    if on_loaded is not None:
        on_loaded(len(loaded.trajectories))
    results = ResultSet(
        settings=settings_json(settings, paths),
        policies=policies,
        windows=list(windows),
        problems=loaded.problems,
    )
    estimates: list[list[tuple[int, int]]] = []
    for trajectory in loaded.trajectories:
        prior = length_prior(trajectory, loaded.trajectories)
        results.trajectories.append(replay_all(trajectory, policies, windows, settings, estimates, prior))
        if progress is not None:
            progress(trajectory)
    results.estimator = estimator_error(estimates)
    return results


def length_prior(trajectory: Trajectory, all_runs: Sequence[Trajectory]) -> LengthPrior:
    """How long the *other* runs of the same agent and model were: what a live gateway
    would know from the sessions before this one (never this run's own length)."""
    return LengthPrior.of(len(t.steps) for t in all_runs
                          if t is not trajectory and (t.source, t.model) == (trajectory.source, trajectory.model))


def replay_all(
    trajectory: Trajectory,
    policies: Sequence[str],
    windows: Sequence[int],
    settings: ReplaySettings,
    estimates: list[list[tuple[int, int]]] | None = None,
    prior: LengthPrior | None = None,
) -> TrajectoryResult:
    result = TrajectoryResult(
        source=trajectory.source,
        trajectory_id=trajectory.trajectory_id,
        path=trajectory.path,
        model=trajectory.model,
        fingerprint=fingerprint(trajectory),
        steps=len(trajectory.steps),
    )
    for window in windows:
        for policy in policies:
            if policy in LIMITS:
                run = LIMITS[policy](trajectory, window, settings, prior).run
            else:
                run = replay(trajectory, policy, window, settings, prior=prior)
            result.add(run)
            # The `none` request is the recorded history itself: where the source
            # kept it whole, the provider's count at each call is its true size.
            if (
                estimates is not None
                and policy == BASELINE
                and window == windows[0]
                and trajectory.source in FULL_HISTORY_SOURCES
            ):
                estimates.append(run.estimates)
    return result
