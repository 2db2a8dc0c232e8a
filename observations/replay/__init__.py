"""Replay evaluation inputs: real agent trajectories in one neutral, plain-Python form.

No Django here: loading and recognising file access runs with no database. The
evaluator calls `load_trajectories` / `iter_trajectories` and walks each
`Trajectory`'s steps; every `ToolEvent` carries the `FileAccess`es recognised in it.
"""

from observations.replay.actions import PathScope, call_kind, editor_accesses, shell_accesses
from observations.replay.load import (
    LoadProblem,
    LoadResult,
    iter_trajectories,
    load_trajectories,
    trajectory_files,
)
from observations.replay.trajectory import (
    FileAccess,
    Step,
    ToolEvent,
    Trajectory,
    TrajectoryFormatError,
)

__all__ = [
    "FileAccess",
    "LoadProblem",
    "LoadResult",
    "PathScope",
    "Step",
    "ToolEvent",
    "Trajectory",
    "TrajectoryFormatError",
    "call_kind",
    "editor_accesses",
    "iter_trajectories",
    "load_trajectories",
    "shell_accesses",
    "trajectory_files",
]
