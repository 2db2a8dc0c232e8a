"""A replay's results as plain data, and their JSON form (``--json``, read by compare).

The JSON holds everything per trajectory: identity (source, id, model, and a
fingerprint of the inputs so `compare` can tell a changed input from a changed
policy), and per policy and window the totals and the per-request figures.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from observations.replay.eval.calibration import EstimatorError
from observations.replay.eval.engine import RunResult
from observations.replay.load import LoadProblem
from observations.replay.trajectory import Trajectory

RESULTS_FORMAT = "atrium-replay-results"
RESULTS_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: before segments (their fields read as none)


class ResultsFormatError(ValueError):
    """A results file is not what `replay --json` writes."""


def fingerprint(trajectory: Trajectory) -> str:
    """sha256 of the trajectory's neutral form: equal inputs, equal fingerprints."""
    body = json.dumps(trajectory.to_json(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(slots=True)
class RunTotals:
    """What compare and the tables need of one run (policy × window)."""

    policy: str
    window: int
    requests: int
    sent: int
    cache_read: int
    cache_write: int
    uncached: int
    input_cost: float
    output_cost: float
    folds: int
    receipts: int
    rereads_after_eviction: int
    denied_rereads: int
    over_window: int
    over_ceiling: int
    failure: str | None
    segments: int = 0
    payload_receipts: int = 0
    handoff_bytes: tuple[int, ...] = ()  # per reset, in order
    # The strict accounting: fold requests (and a new segment's first) written whole.
    input_cost_full_write: float | None = None  # None: a results file from before it was kept
    cache_read_full_write: int | None = None
    # The fidelity proxy (reads.py); None: a results file from before it was kept.
    needed: int | None = None
    needed_tokens: int | None = None
    needed_steps: int | None = None

    @property
    def cost_full_write(self) -> float | None:
        return None if self.input_cost_full_write is None else self.input_cost_full_write + self.output_cost

    @property
    def cost(self) -> float:
        return self.input_cost + self.output_cost

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @classmethod
    def of(cls, run: RunResult) -> RunTotals:
        return cls(
            policy=run.policy,
            window=run.window,
            requests=run.requests,
            sent=sum(run.sent),
            cache_read=sum(run.cache_read),
            cache_write=sum(run.cache_write),
            uncached=sum(run.uncached),
            input_cost=round(run.input_cost, 2),
            output_cost=round(run.output_cost, 2),
            folds=len(run.folds),
            receipts=run.receipts_issued,
            rereads_after_eviction=run.rereads_after_eviction,
            denied_rereads=run.denied_rereads,
            over_window=run.over_window,
            over_ceiling=run.over_ceiling,
            failure=run.failure,
            segments=len(run.segments),
            payload_receipts=run.payload_receipts,
            handoff_bytes=tuple(h["bytes"] for h in run.handoffs),
            input_cost_full_write=round(run.input_cost_full_write, 2),
            cache_read_full_write=run.cache_read_full_write,
            needed=run.needed,
            needed_tokens=run.needed_tokens,
            needed_steps=run.needed_steps,
        )


@dataclass(slots=True)
class TrajectoryResult:
    source: str
    trajectory_id: str
    path: str
    model: str
    fingerprint: str
    steps: int
    totals: dict[tuple[str, int], RunTotals] = field(default_factory=dict)
    # Per-request figures, kept for --json and --chart: (policy, window) -> lists.
    requests: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.source}/{self.trajectory_id}"

    def add(self, run: RunResult) -> None:
        self.totals[(run.policy, run.window)] = RunTotals.of(run)
        self.requests[(run.policy, run.window)] = {
            "trigger": run.trigger,
            "ceiling": run.ceiling,
            "sent": run.sent,
            "cache_read": run.cache_read,
            "cache_write": run.cache_write,
            "uncached": run.uncached,
            "receipts": run.receipts,
            "folds": run.folds,
            "segments": run.segments,
            "handoffs": run.handoffs,
        }


@dataclass(slots=True)
class ResultSet:
    settings: dict[str, Any]
    policies: list[str]
    windows: list[int]
    trajectories: list[TrajectoryResult] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    estimator: EstimatorError | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "settings": self.settings,
            "policies": self.policies,
            "windows": self.windows,
            "estimator": self.estimator.to_json() if self.estimator else None,
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
            "trajectories": [_trajectory_json(t) for t in self.trajectories],
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(self.to_json(), ensure_ascii=False) + "\n", encoding="utf-8"
        )

    @classmethod
    def read(cls, path: str | Path) -> ResultSet:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ResultsFormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise ResultsFormatError(f"{path}: not valid JSON: {exc}") from exc
        try:
            return cls.from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsFormatError(
                f"{path}: not a replay results file ({type(exc).__name__}: {exc})"
            ) from exc

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResultSet:
        if data.get("format") != RESULTS_FORMAT or data.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"expected format {RESULTS_FORMAT!r} version {RESULTS_VERSION}")
        estimator = data.get("estimator")
        return cls(
            settings=dict(data["settings"]),
            policies=[str(p) for p in data["policies"]],
            windows=[int(w) for w in data["windows"]],
            trajectories=[_trajectory_from_json(t) for t in data["trajectories"]],
            problems=[LoadProblem(str(p["path"]), str(p["reason"])) for p in data["problems"]],
            estimator=EstimatorError.from_json(estimator) if estimator else None,
        )


_TOTAL_FIELDS = tuple(
    name for name in RunTotals.__dataclass_fields__ if name not in ("policy", "window")
)


def _trajectory_json(result: TrajectoryResult) -> dict[str, Any]:
    runs = []
    for (policy, window), totals in result.totals.items():
        run: dict[str, Any] = {"policy": policy, "window": window}
        run.update({name: getattr(totals, name) for name in _TOTAL_FIELDS})
        run["cost"] = round(totals.cost, 2)
        run["per_request"] = result.requests.get((policy, window))
        runs.append(run)
    return {
        "key": result.key,
        "source": result.source,
        "trajectory_id": result.trajectory_id,
        "path": result.path,
        "model": result.model,
        "fingerprint": result.fingerprint,
        "steps": result.steps,
        "runs": runs,
    }


def _trajectory_from_json(data: dict[str, Any]) -> TrajectoryResult:
    result = TrajectoryResult(
        source=str(data["source"]),
        trajectory_id=str(data["trajectory_id"]),
        path=str(data["path"]),
        model=str(data["model"]),
        fingerprint=str(data["fingerprint"]),
        steps=int(data["steps"]),
    )
    for run in data["runs"]:
        key = (str(run["policy"]), int(run["window"]))
        values = {name: run[name] for name in _TOTAL_FIELDS if name in run}
        values["handoff_bytes"] = tuple(values.get("handoff_bytes", ()))
        result.totals[key] = RunTotals(policy=key[0], window=key[1], **values)
        if run.get("per_request") is not None:
            result.requests[key] = run["per_request"]
    return result
