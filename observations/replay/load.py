"""Load trajectories of any supported format from files and directories.

A bad file never stops a run: it is reported as a `LoadProblem` (path and a one-line
reason) and skipped. Directories are walked recursively, in sorted order, picking up
``*.traj.json`` (mini-swe-agent), ``*.traj`` (SWE-agent), ``*.jsonl`` (OpenHands, one run
per line) and ``*.atrium.json`` (Atrium); a file named explicitly is read whatever its
name, its format recognised from its content.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from observations.replay.readers.atrium import SUFFIX as ATRIUM_SUFFIX
from observations.replay.readers.atrium import is_atrium, read_atrium
from observations.replay.readers.mini_swe_agent import read_mini_swe_agent
from observations.replay.readers.openhands import read_openhands
from observations.replay.readers.swe_agent import read_swe_agent
from observations.replay.trajectory import Trajectory, TrajectoryFormatError

TRAJECTORY_SUFFIXES = (".traj.json", ".traj", ".jsonl", ATRIUM_SUFFIX)
Reader = Callable[..., Trajectory]


@dataclass(frozen=True, slots=True)
class LoadProblem:
    path: str
    reason: str  # one line

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(slots=True)
class LoadResult:
    trajectories: list[Trajectory] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)


def load_trajectories(paths: Iterable[str | os.PathLike[str]]) -> LoadResult:
    result = LoadResult()
    result.trajectories.extend(iter_trajectories(paths, on_problem=result.problems.append))
    return result


def iter_trajectories(
    paths: Iterable[str | os.PathLike[str]],
    *,
    on_problem: Callable[[LoadProblem], None] | None = None,
) -> Iterator[Trajectory]:
    """Trajectories one at a time, so a caller can stream a large set; every skipped
    file or line is passed to ``on_problem``."""
    report = on_problem or (lambda problem: None)
    for path in trajectory_files(paths, on_problem=report):
        yield from _read_file(path, report)


def trajectory_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    on_problem: Callable[[LoadProblem], None] | None = None,
) -> list[Path]:
    """The files ``paths`` name: files as given, directories walked for trajectory files."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and p.name.endswith(TRAJECTORY_SUFFIXES)
                )
            )
        elif path.is_file():
            found.append(path)
        elif on_problem is not None:
            on_problem(LoadProblem(str(path), "no such file or directory"))
    return found


def _read_file(path: Path, report: Callable[[LoadProblem], None]) -> Iterator[Trajectory]:
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        report(LoadProblem(name, f"cannot read: {exc.strerror or exc}"))
        return
    if path.name.endswith(".jsonl"):
        for number, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                yield from _parse(f"{name}:{number}", line, report, read_openhands)
        return
    yield from _parse(name, raw, report, None)


def _parse(
    name: str, raw: bytes, report: Callable[[LoadProblem], None], reader: Reader | None
) -> Iterator[Trajectory]:
    try:
        data = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        report(LoadProblem(name, f"not valid JSON (truncated?): {_one_line(exc)}"))
        return
    reader = reader or _detect(data)
    if reader is None:
        report(LoadProblem(name, "not a recognised trajectory format"))
        return
    try:
        trajectory = reader(data, path=name)
    except TrajectoryFormatError as exc:
        report(LoadProblem(name, _one_line(exc)))
        return
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A shape the reader's checks did not anticipate: still only this file's problem.
        report(LoadProblem(name, f"unexpected structure ({type(exc).__name__}: {_one_line(exc)})"))
        return
    if not trajectory.steps:
        report(LoadProblem(name, "no model steps"))
        return
    yield trajectory


def _detect(data: Any) -> Reader | None:
    if not isinstance(data, dict):
        return None
    if is_atrium(data):
        return read_atrium
    if str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return read_mini_swe_agent
    if isinstance(data.get("history"), list) and "metrics" in data and "instance_id" in data:
        return read_openhands
    if isinstance(data.get("history"), list) and ("trajectory" in data or "info" in data):
        return read_swe_agent
    return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
