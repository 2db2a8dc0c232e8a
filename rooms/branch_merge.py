"""A session's branch merged into its room's main, where the room's repository is: by the
worker beside it, or by the hub for a worker on another machine (``remote.views``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from django.conf import settings

from rooms import upstream_link
from rooms.models import Room
from rooms.repository.worktrees import MergeResult, worktree_merge


def branch_merge(room: Room, *, branch: str, title: str, expect_tip: str | None = None) -> MergeResult:
    """The branch merged (a conflict or a tree too large changes nothing), then given to
    the room's upstream as the room says. ``expect_tip``: only if the branch is there."""
    result = worktree_merge(repo=Path(room.repo_path), branch=branch, message=f"Merge {branch}: {title}",
                            target=room.default_branch, max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
                            max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES, expect_tip=expect_tip)
    if result.status == "merged":
        upstream_link.give_work(room, branch=branch)
    return result


def merge_said(result: MergeResult) -> dict[str, Any]:
    """A merge's result as the hub answers a worker on another machine with it."""
    return {**dataclasses.asdict(result), "conflicts": list(result.conflicts)}


def merge_heard(said: dict[str, Any]) -> MergeResult:
    return MergeResult(**{**said, "conflicts": tuple(said["conflicts"])})
