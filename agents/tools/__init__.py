"""The tools an agent calls, confined to its session's worktree.

The step loop builds one ``ToolBox`` per session run and calls ``execute`` for each
tool call; nothing here imports Django, so settings arrive as arguments.
"""

from __future__ import annotations

from .box import ToolBox
from .disk import WorktreeFull
from .jobs import JobRegistry, JobStatus
from .outcome import ToolOutcome
from .paths import PathRefused, resolve_path
from .sandbox import Limits, Place, SandboxPolicy, SandboxUnavailable
from .schemas import TOOL_SCHEMAS
from .shell import JobReport, job_handle
from .text import NUL_MARKER, clean_data, clean_text

__all__ = [
    "NUL_MARKER",
    "TOOL_SCHEMAS",
    "JobRegistry",
    "JobReport",
    "JobStatus",
    "Limits",
    "PathRefused",
    "Place",
    "SandboxPolicy",
    "SandboxUnavailable",
    "ToolBox",
    "ToolOutcome",
    "WorktreeFull",
    "clean_data",
    "clean_text",
    "job_handle",
    "resolve_path",
]
