"""Which paths of a worktree may have changed since the last look, from the kernel
(inotify on every folder of the worktree, kept while the session runs here): the write
watch then asks git about those paths alone instead of reading the whole worktree.

It answers None whenever it cannot vouch for its list: the kernel's queue overflowed,
a folder was removed or moved (its files are not listed one by one), more paths than
are worth naming, a folder it could not watch, or git's own files changed (the agent
committed, checked out, staged): the caller then reads everything. Folders are watched
without following links (a link is a path like any other); a folder made since is
watched when the kernel says so, and every path under it is a candidate, so nothing
made in it before the watch took hold is missed.
"""

from __future__ import annotations

import os
from pathlib import Path

from inotify_simple import INotify, flags

_CHANGES = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.CLOSE_WRITE | flags.MOVED_FROM | flags.MOVED_TO
            | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF)
_FOLDER = _CHANGES | flags.DONT_FOLLOW | flags.ONLYDIR | flags.EXCL_UNLINK
_LOST = flags.Q_OVERFLOW | flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT
MAX_PATHS = 2_000  # past this, reading everything is cheaper than naming them
MAX_FOLDERS = 50_000  # a worktree with more folders is read whole each time


class WorktreeWatch:
    def __init__(self, root: Path, git_folder: Path, *, ignored: tuple[str, ...] = ()) -> None:
        """``git_folder``: the worktree's folder in the room repository (its HEAD, index,
        logs); ``ignored``: names there that are the hub's own (its reading index)."""
        self.root, self.ignored = root, ignored
        self._inotify = INotify()
        self._folders: dict[int, str] = {}
        self._git_wd = self._inotify.add_watch(git_folder, _FOLDER)
        self._lost = False
        self._paths: set[str] = set()
        self._watch_tree("")

    def close(self) -> None:
        self._inotify.close()

    def changed(self) -> set[str] | None:
        """The paths (relative, as git names them) that may have changed since the last
        call, or None when the caller must read the whole worktree; either way the
        watch starts a new list."""
        self._take(self._inotify.read(timeout=0))
        paths, lost = self._paths, self._lost or len(self._paths) > MAX_PATHS
        self._paths, self._lost = set(), False
        return None if lost else paths

    def _take(self, events) -> None:
        for event in events:
            if event.mask & _LOST or event.wd not in self._folders and event.wd != self._git_wd:
                self._lost = self._lost or not event.mask & flags.IGNORED
                continue
            if event.wd == self._git_wd:
                if not event.name.startswith(self.ignored):
                    self._lost = True  # git's own state moved: HEAD, the index, a merge
                continue
            path = f"{self._folders[event.wd]}{event.name}"
            if event.mask & flags.ISDIR:
                if event.mask & (flags.CREATE | flags.MOVED_TO):
                    self._watch_tree(path + "/")
                elif event.mask & (flags.DELETE | flags.MOVED_FROM):
                    self._lost = True  # what was under it is not listed one by one
            else:
                self._paths.add(path)

    def _watch_tree(self, relative: str) -> None:
        """Watch the folder at ``relative`` (ending in "/", or "" for the root) and every
        folder under it; every file under it becomes a candidate."""
        pending = [relative]
        while pending:
            folder = pending.pop()
            if len(self._folders) >= MAX_FOLDERS:
                self._lost = True
                return
            try:
                self._folders[self._inotify.add_watch(self.root / folder, _FOLDER)] = folder
                entries = list(os.scandir(self.root / folder))
            except OSError:  # gone, a link put in its place, no watches left
                self._lost = True
                continue
            for entry in entries:
                if entry.name == ".git" and not folder:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(f"{folder}{entry.name}/")
                elif relative:  # made since the watch began: may hold anything
                    self._paths.add(f"{folder}{entry.name}")
