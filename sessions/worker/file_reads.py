"""The worktree read with git, for the step loop's write watch: its HEAD and what
differs from it now (rooms/repository/dirty.py), compared with the last reading by
sessions/runtime/file_changes.py."""

from __future__ import annotations

import logging
from pathlib import Path

from rooms.repository.dirty import content_at, content_sha256, dirty_files, head_moves
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, admin_dir
from sessions.runtime.file_changes import FileChange, Reading, changes_between

logger = logging.getLogger(__name__)


class WorktreeReads:
    def __init__(self, worktree: Worktree) -> None:
        self.worktree = worktree
        self._admin: Path | None = None

    def file_changes(self, before: Reading | None) -> tuple[list[FileChange], Reading]:
        """No change and the same reading when git cannot read the worktree (gone, being
        removed): a session is never failed for its record."""
        try:
            return self._changes(before)
        except (GitError, WorktreeError) as exc:
            logger.warning("the worktree %s could not be read for its changes: %s", self.worktree.path, exc)
            return [], before or Reading()

    def _changes(self, before: Reading | None) -> tuple[list[FileChange], Reading]:
        path = Path(self.worktree.path)
        if self._admin is None:
            self._admin = admin_dir(self.worktree)
        now = dirty_files(path, self._admin)
        if before is None:
            return [], Reading(head=now.head, files={p: sha for p, (_, sha) in now.files.items()})
        moved = head_moves(path, self._admin, before.head, now.head) if before.head and before.head != now.head else ()
        return changes_between(before, now.head, now.files, moved=moved,
                               content_now=lambda name: content_sha256(path, name),
                               content_before=lambda name: content_at(path, self._admin, before.head, name)
                               if before.head else "")
