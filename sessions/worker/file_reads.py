"""The worktree read with git, for the step loop's write watch: its HEAD and what
differs from it now (rooms/repository/dirty.py), compared with the last reading by
sessions/runtime/file_changes.py. Between readings the kernel names the paths that may
have changed (sessions/worker/worktree_watch.py), and git is asked about those alone;
whenever that list cannot be vouched for, the whole worktree is read."""

from __future__ import annotations

import logging
from pathlib import Path

from rooms.repository.dirty import (
    READING_INDEX,
    content_at,
    content_sha256,
    dirty_files,
    head_moves,
)
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, admin_dir
from sessions.runtime.file_changes import FileChange, Reading, changes_between
from sessions.worker.worktree_watch import WorktreeWatch

logger = logging.getLogger(__name__)


class WorktreeReads:
    def __init__(self, worktree: Worktree) -> None:
        self.worktree = worktree
        self._admin: Path | None = None
        self._watch: WorktreeWatch | None = None

    def file_changes(self, before: Reading | None) -> tuple[list[FileChange], Reading]:
        """No change and the same reading when git cannot read the worktree (gone, being
        removed): a session is never failed for its record."""
        try:
            return self._changes(before)
        except (GitError, WorktreeError) as exc:
            logger.warning("the worktree %s could not be read for its changes: %s", self.worktree.path, exc)
            return [], before or Reading()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def _changes(self, before: Reading | None) -> tuple[list[FileChange], Reading]:
        path = Path(self.worktree.path)
        if self._admin is None:
            self._admin = admin_dir(self.worktree)
        candidates = self._watch.changed() if self._watch is not None and before is not None else None
        if candidates is None:
            self._arm(path)  # before the reading: nothing changed meanwhile goes unseen
        elif not candidates:
            return [], before
        now = dirty_files(path, self._admin, paths=candidates)
        if before is None:
            return [], Reading(head=now.head, files={p: sha for p, (_, sha) in now.files.items()})
        dirty = now.files
        if candidates is not None:  # the rest is as the last reading left it
            dirty = {p: (True, sha) for p, sha in before.files.items() if p not in candidates} | dirty
        moved = head_moves(path, self._admin, before.head, now.head) if before.head and before.head != now.head else ()
        return changes_between(before, now.head, dirty, moved=moved,
                               content_now=lambda name: content_sha256(path, name),
                               content_before=lambda name: content_at(path, self._admin, before.head, name)
                               if before.head else "")

    def _arm(self, path: Path) -> None:
        if self._watch is not None:
            return
        try:
            self._watch = WorktreeWatch(path, self._admin, ignored=(READING_INDEX,))
        except OSError as exc:  # no inotify here, or no watches left: every reading reads everything
            logger.info("the worktree %s is read whole each time: %s", path, exc)
