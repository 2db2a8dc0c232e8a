"""Keeping a room's repository quick to clone and fetch: its objects in one pack with a
reachability bitmap.

With the bitmap, git serving a clone or fetch (``upload-pack``, behind the git remote)
reads what to send from it and sends the pack's own bytes; without it, git walks every
commit and tree and compresses each loose object again, for every clone. Nothing else
packs a room's objects: the hub turns git's automatic gc off (``gc.auto=0``: no detached
process outliving a call), and each hub commit and small push leaves loose objects.

A repack deletes no object: what no ref reaches goes into a cruft pack kept without
expiry (``--cruft``), since not every writer holds the room lock (a session commits in
its worktree, an upstream fetch writes objects before main moves) and an object no ref
reaches now may be one a moment later. It runs under the room lock all the same, so no
push, merge or intent commit moves refs while it reads them; it never waits for it.

Nothing here imports Django: paths come in as arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import GitError, git
from rooms.repository.lock import LockBusy, room_repo_lock_now

logger = logging.getLogger(__name__)

PACKS_MAX = 8  # packs (cruft and kept ones aside) before they are made one again
LOOSE_MAX = 1000  # loose objects before they are packed: each costs every clone a compression
# The room lock is held for as long: past it git is stopped, what it half wrote removed,
# and that repository left alone for REPACK_FAILED_SECONDS, twice as long after each
# failure in a row, up to REPACK_FAILED_MAX_SECONDS.
REPACK_SECONDS = 60
REPACK_EVERY_SECONDS = 60  # a repository is repacked at most this often by one process
REPACK_FAILED_SECONDS = 3600
REPACK_FAILED_MAX_SECONDS = 7 * 86_400
# The name-hash cache lets a fetch's pack reuse the stored deltas; the lookup table makes
# the bitmap of a long history quick to open.
REPACK_CONFIG = (("pack.writeBitmapHashCache", "true"), ("pack.writeBitmapLookupTable", "true"))
_FAN_OUT = re.compile(r"^[0-9a-f]{2}$")


@dataclass(frozen=True, slots=True)
class Packing:
    """How a repository's objects are stored, as far as a clone's cost goes."""

    packs: int  # cruft packs and kept (``.keep``) ones not counted
    bitmapped: bool
    loose: int  # counted up to LOOSE_MAX + 1


def packing_of(git_dir: Path) -> Packing:
    """Read from folder listings alone: cheap enough for every fetch."""
    names = _listing(git_dir / "objects" / "pack")
    stems = [name.removesuffix(".pack") for name in names if name.endswith(".pack")]
    packs = sum(1 for stem in stems if f"{stem}.mtimes" not in names and f"{stem}.keep" not in names)
    loose = 0
    for folder in _listing(git_dir / "objects"):
        if _FAN_OUT.match(folder):
            loose += len(_listing(git_dir / "objects" / folder))
            if loose > LOOSE_MAX:
                break
    return Packing(packs=packs, bitmapped=any(name.endswith(".bitmap") for name in names), loose=loose)


def repack_needed(git_dir: Path) -> bool:
    packing = packing_of(git_dir)
    has_objects = packing.packs > 0 or packing.loose > 0
    return (has_objects and not packing.bitmapped) or packing.packs > PACKS_MAX or packing.loose > LOOSE_MAX


def repository_repack(repo: Path, *, timeout: float = REPACK_SECONDS) -> bool:
    """Pack the repository's objects into one pack with a bitmap (and a cruft pack) if it
    needs it; whether it did. Called holding the room lock. GitError when git fails or
    takes longer than ``timeout``, with the temporary packs it left removed."""
    git_dir = Path(repo) / ".git"
    if not repack_needed(git_dir):
        return False
    try:
        git("repack", "-d", "--cruft", "--write-bitmap-index", "--quiet", cwd=repo, timeout=timeout,
            config=REPACK_CONFIG)
    except GitError:
        for name in _listing(git_dir / "objects" / "pack"):
            if name.startswith(("tmp_", ".tmp-")):
                with contextlib.suppress(OSError):
                    os.unlink(git_dir / "objects" / "pack" / name)
        raise
    return True


# Repacks under way in this process, by repository (a task is kept here until it ends),
# when each repository may be repacked again, and its failures in a row.
_repacking: dict[Path, asyncio.Future] = {}
_not_before: dict[Path, float] = {}
_failures: dict[Path, int] = {}


def repository_repack_soon(repo: Path) -> None:
    """From the event loop, after a push or a fetch: a repack in a thread if the
    repository needs one, under the room lock if it is free then. Skipped when the lock
    is taken (a push or merge: whichever request comes next asks again), while one
    runs, and for REPACK_EVERY_SECONDS after one started (longer after one failed): a
    repository git cannot bitmap would otherwise be tried at every fetch."""
    repo = Path(repo)
    now = time.monotonic()
    if repo in _repacking or now < _not_before.get(repo, now):
        return
    _not_before[repo] = now + REPACK_EVERY_SECONDS
    task = asyncio.ensure_future(asyncio.to_thread(_repack_if_free, repo))
    _repacking[repo] = task
    task.add_done_callback(lambda _: _repacking.pop(repo, None))


def _repack_if_free(repo: Path) -> None:
    """In a thread of its own: the lock is held by the thread that runs git, and for
    exactly as long."""
    try:
        if not repack_needed(repo / ".git"):
            return
        with room_repo_lock_now(repo):
            repository_repack(repo)
        _failures.pop(repo, None)
    except LockBusy:
        _not_before.pop(repo, None)  # not tried: the next push or fetch may
    except (GitError, OSError):
        failures = _failures[repo] = _failures.get(repo, 0) + 1
        wait = min(REPACK_FAILED_SECONDS * 2 ** (failures - 1), REPACK_FAILED_MAX_SECONDS)
        _not_before[repo] = time.monotonic() + wait
        logger.exception("the repository %s was not repacked (failure %d in a row)", repo, failures)


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:  # none, or not readable: nothing known there
        return set()
