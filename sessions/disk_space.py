"""The free space of the hub's disk (its data folder: repositories, worktrees, jobs, the
SQLite database): below ATRIUM_MIN_FREE_MB no new session starts, and /healthz says so,
so the sessions already running keep the space they need to end."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings


def free_megabytes() -> int:
    folder = Path(settings.DATA_DIR)
    while not folder.exists() and folder != folder.parent:  # not made yet: the disk it will be on
        folder = folder.parent
    return shutil.disk_usage(folder).free >> 20


def low_disk() -> str | None:
    """Why new sessions are refused now, or None."""
    free, minimum = free_megabytes(), settings.ATRIUM_MIN_FREE_MB
    if free >= minimum:
        return None
    return (f"The hub's disk has {free} MB free, below its minimum of {minimum} MB (ATRIUM_MIN_FREE_MB): "
            "new sessions start again once space is freed.")
