"""How much disk a session's files take (its worktree, /tmp, jobs and their output), checked against the
limit after each command, after the room's check and before a commit; the job wrapper
stops a command that passes it while it runs (`_jobwrapper.disk_usage` counts for both)."""

from __future__ import annotations

from pathlib import Path

from ._jobwrapper import UNCOUNTABLE, disk_usage, size_text


class WorktreeFull(RuntimeError):
    """The session's files take more disk than their limit: the session stops (the
    message says how much, and the limit)."""


HUB_COUNT_TIMEOUT_SECONDS = 120.0


def check_worktree(paths: list[Path], max_bytes: int) -> None:
    """WorktreeFull past ``max_bytes``; a tree too large to count in two minutes (millions
    of files) counts as past it: what cannot be counted is not let through."""
    present = [str(path) for path in paths if path.exists()]
    if not present:
        return
    used = disk_usage(present, timeout=HUB_COUNT_TIMEOUT_SECONDS)
    if used is None:
        used = UNCOUNTABLE
    if used > max_bytes:
        raise WorktreeFull(f"the session's files (worktree, /tmp, command output) take {size_text(used)} of disk, "
                           f"past the room's limit of "
                           f"{size_text(max_bytes)} (ATRIUM_WORKTREE_MAX_MB)")
