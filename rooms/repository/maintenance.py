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
push, merge or intent commit moves refs while it reads them.

Nothing here imports Django: paths come in as arguments.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import GitError, git
from rooms.repository.lock import LockBusy, room_repo_lock_async

logger = logging.getLogger(__name__)

PACKS_MAX = 8  # packs (cruft and kept ones aside) before they are made one again
LOOSE_MAX = 1000  # loose objects before they are packed: each costs every clone a compression
# The room lock is held for as long: past it git is stopped, and that repository is left
# alone for REPACK_FAILED_SECONDS. (A repository being made may be given longer: no one
# waits for its lock.)
REPACK_SECONDS = 60
REPACK_EVERY_SECONDS = 60  # a repository is repacked at most this often by one process
REPACK_FAILED_SECONDS = 3600
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
    needs it; whether it did. Called while holding the room lock, or before anyone else
    knows the repository (one being made, which may allow it longer). GitError when git
    fails or takes longer than ``timeout``."""
    if not repack_needed(Path(repo) / ".git"):
        return False
    git("repack", "-d", "--cruft", "--write-bitmap-index", "--quiet", cwd=repo, timeout=timeout,
        config=REPACK_CONFIG)
    return True


# Repacks under way in this process, by repository (a task is kept here until it ends),
# and when each repository may be repacked again.
_repacking: dict[Path, asyncio.Task] = {}
_not_before: dict[Path, float] = {}


def repository_repack_soon(repo: Path) -> None:
    """From the event loop, after a push or a fetch: a repack in the background if the
    repository needs one, under the room lock if it is free right now. Skipped when the
    lock is taken (a push or merge: whichever request comes next asks again), while one
    runs, and for REPACK_EVERY_SECONDS after one started (REPACK_FAILED_SECONDS after one
    failed): a repository git cannot bitmap would otherwise be tried at every fetch."""
    repo = Path(repo)
    now = time.monotonic()
    if repo in _repacking or now < _not_before.get(repo, now) or not repack_needed(repo / ".git"):
        return
    _not_before[repo] = now + REPACK_EVERY_SECONDS
    task = asyncio.get_running_loop().create_task(_repack_if_free(repo))
    _repacking[repo] = task
    task.add_done_callback(lambda _: _repacking.pop(repo, None))


async def _repack_if_free(repo: Path) -> None:
    try:
        async with room_repo_lock_async(repo, wait_seconds=0):
            await asyncio.to_thread(repository_repack, repo)
    except LockBusy:
        _not_before.pop(repo, None)  # not tried: the next push or fetch may
    except (GitError, OSError):
        _not_before[repo] = time.monotonic() + REPACK_FAILED_SECONDS
        logger.exception("the repository %s was not repacked", repo)


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return set()
