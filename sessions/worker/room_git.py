"""Where a worker does a session's git work (issue 32): in the room's repository itself
when its machine sees the hub's folders, or, when ``ATRIUM_HUB_URL`` names the hub, in
a copy of its own kept from the hub's git remote (``rooms.repository.mirror``). There
the session's branch is fetched before its worktree is made (so a worker that takes a
session over starts from what the last one pushed), pushed after each commit, and
merged, brought in from upstream or proposed by the hub, where the room's repository
is; main is fetched again before anything reads it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx2
from django.conf import settings

from rooms import forges, upstream_link
from rooms.branch_merge import branch_merge, merge_heard
from rooms.models import Room
from rooms.repository.activity import branch_tip, is_ancestor
from rooms.repository.git import GitError, git
from rooms.repository.handover import reading_at, worktree_reading
from rooms.repository.lock import room_repo_lock
from rooms.repository.mirror import (
    HubRefused,
    HubRemote,
    HubUnreachable,
    hub_failure,
    mirror_fetch,
    mirror_push,
    mirror_ready,
    mirror_tips,
)
from rooms.repository.worktrees import (
    MergeResult,
    Worktree,
    WorktreeError,
    session_branch,
    worktree_create,
    worktree_remove,
)
from rooms.worker_tokens import worker_token_mint
from sessions.models import Session

HUB_CALL_SECONDS = 300  # a merge waits its turn for the room's lock
PUSH_PATIENCE_SECONDS = 60.0  # a checkpoint's push tries again this long before the unit is given up
FROM_HUB = "refs/atrium/hub/"  # where the copy takes a session's branch in before it is checked out
REVIEWED = "refs/atrium/reviewed/"  # where a reviewer's copy keeps the branches it reviews


class RoomGit:
    """The room's repository itself: this machine sees the hub's folders."""

    keeps_own_copy = False

    def __init__(self, room: Room) -> None:
        self.room = room
        self.repo = Path(room.repo_path)

    def main_now(self) -> Path:
        """The repository, its main as the hub has it now."""
        return self.repo

    def worktree(self, session_id: int) -> Worktree:
        return worktree_create(repo=self.repo, worktrees_dir=Path(settings.WORKTREES_DIR), session_id=session_id,
                               base=self.room.default_branch, max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
                               max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES)

    def reviewed_worktree(self, author: Session, reviewer_id: int) -> Worktree:
        """What the reviewer reads: the author's worktree as the author left it, or, when
        that is on another machine, a checkout of the reviewer's own of the author's
        branch, made again as the branch moves."""
        if Path(author.worktree_path).is_dir():
            return Worktree(path=Path(author.worktree_path), branch=author.branch, repo=self.repo)
        return self._reading(author, _tip_here(self.repo, author.branch), reviewer_id)

    def _reading(self, author: Session, tip: str, reviewer_id: int) -> Worktree:
        if not tip:
            raise WorktreeError(f"session {author.pk}'s branch {author.branch} is not on the hub to review")
        return worktree_reading(repo=self.repo, path=Path(settings.WORKTREES_DIR) / f"review-{reviewer_id}",
                                commit=tip, branch=author.branch)

    def committed(self, branch: str) -> None:
        """After a commit on the session's branch: the hub's repository has it already."""

    def merge(self, branch: str, *, title: str) -> MergeResult:
        return branch_merge(self.room, branch=branch, title=title)

    def bring_in(self) -> None:
        upstream_link.bring_in(self.room)

    def propose(self, *, branch: str, title: str, body: str) -> forges.Proposal | None:
        return upstream_link.propose(self.room, branch=branch, title=title, body=body)


class CopyRoomGit(RoomGit):
    """The worker's own copy of the room's repository, kept from the hub's git remote
    with a token that opens it while this worker holds the session's lease."""

    keeps_own_copy = True

    def __init__(self, room: Room, *, session_id: int, owner: str) -> None:
        super().__init__(room)
        self.session_id, self.owner = session_id, owner
        self.repo = Path(settings.COPIES_DIR) / Path(room.repo_path).name
        self.url = f"{settings.HUB_URL}/rooms/{room.slug}.git"

    @property
    def remote(self) -> HubRemote:
        # Made for each call: a session may outlive a token (a day).
        return HubRemote(self.url, worker_token_mint(room_id=self.room.pk, session_id=self.session_id,
                                                     owner=self.owner))

    def main_now(self) -> Path:
        mirror_ready(self.repo)
        remote = self.remote
        mirror_fetch(self.repo, remote, mirror_tips(self.repo, remote, (self.room.default_branch,)))
        return self.repo

    def worktree(self, session_id: int) -> Worktree:
        """Made from the session's branch as the hub has it. A worktree of this machine's
        own, left from before: kept if its branch is the hub's or ahead of it (pushed at
        once), made again if another worker moved the branch since (what was never
        pushed here is not the session's any more)."""
        mirror_ready(self.repo)
        remote, branch = self.remote, session_branch(session_id)
        tips = mirror_tips(self.repo, remote, (self.room.default_branch, branch))
        # A worker beside the repository may have it checked out there, with work left in it.
        if branch in tips and self._ask_hub("release")["released"]:
            tips = mirror_tips(self.repo, remote, (self.room.default_branch, branch))
        mirror_fetch(self.repo, remote, tips, into=FROM_HUB)
        hub, here = tips.get(branch, ""), _tip_here(self.repo, branch)
        ahead = bool(here) and here != hub and (not hub or is_ancestor(self.repo, hub, here))
        left = Worktree(path=Path(settings.WORKTREES_DIR) / str(session_id), branch=branch, repo=self.repo)
        if hub and here != hub and not ahead:
            worktree_remove(worktree=left)  # (a folder the copy does not know goes too)
            git("update-ref", f"refs/heads/{branch}", hub, cwd=self.repo)
        elif not here and left.path.exists():
            worktree_remove(worktree=left)  # a folder of a copy made again since: nothing of the branch
        if main := tips.get(self.room.default_branch):
            with room_repo_lock(self.repo):  # beside another process's fetch of main into the copy
                git("update-ref", f"refs/heads/{self.room.default_branch}", main, cwd=self.repo)
        worktree = super().worktree(session_id)
        if ahead:
            self.committed(branch)  # commits of its own the hub never got (their push failed)
        return worktree

    def reviewed_worktree(self, author: Session, reviewer_id: int) -> Worktree:
        """Always a checkout of the reviewer's own, of the author's branch as pushed (the
        author's worktree may be on any machine); moved only when the branch moved."""
        mirror_ready(self.repo)
        remote = self.remote
        tips = mirror_tips(self.repo, remote, (author.branch,))
        mirror_fetch(self.repo, remote, tips, into=REVIEWED)
        reading = Worktree(path=Path(os.path.realpath(Path(settings.WORKTREES_DIR) / f"review-{reviewer_id}")),
                           branch=author.branch, repo=self.repo)
        if tips and reading.path.is_dir() and reading_at(reading) == tips[author.branch]:
            return reading
        return self._reading(author, tips.get(author.branch, ""), reviewer_id)

    def committed(self, branch: str) -> None:
        """Pushed; a hub that does not answer is asked again for a while: giving the
        session back now would call the model again for a unit that is done."""
        deadline = time.monotonic() + PUSH_PATIENCE_SECONDS
        pause = 1.0
        while True:
            try:
                return mirror_push(self.repo, self.remote, branch)
            except HubUnreachable:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 15.0)

    def merge(self, branch: str, *, title: str) -> MergeResult:
        self.committed(branch)
        said = self._ask_hub("merge", {"tip": _tip_here(self.repo, branch)})
        self.main_now()
        return merge_heard(said)

    def bring_in(self) -> None:
        self._ask_hub("bring-in")

    def propose(self, *, branch: str, title: str, body: str) -> forges.Proposal | None:
        self.committed(branch)
        said = self._ask_hub("propose", {"title": title, "body": body})
        return forges.Proposal(**said["proposal"]) if said.get("proposal") else None

    def _ask_hub(self, step: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The hub's answer to a step it takes on the room's repository for this session."""
        try:
            answer = httpx2.post(f"{self.url}/atrium/{step}", json=body or {}, timeout=HUB_CALL_SECONDS,
                                 auth=("worker", self.remote.token))
        except httpx2.HTTPError as exc:
            raise HubUnreachable(f"the hub could not be asked to {step} the session's branch: {exc}") from exc
        if answer.status_code >= 500 or answer.status_code == 429:
            raise HubUnreachable(f"the hub could not {step} the session's branch now: {answer.status_code}")
        if answer.status_code == 401:
            raise hub_failure("The requested URL returned error: 401")
        if answer.status_code != 200:
            raise HubRefused(f"asked to {step} the session's branch, it answered {answer.status_code}: "
                             f"{answer.text.strip()[:500]}")
        return answer.json()


def room_git(room: Room, *, session_id: int, owner: str) -> RoomGit:
    return CopyRoomGit(room, session_id=session_id, owner=owner) if settings.HUB_URL else RoomGit(room)


def _tip_here(repo: Path, branch: str) -> str:
    """What ``branch`` names in the copy; empty if nothing."""
    try:
        return branch_tip(repo, f"refs/heads/{branch}")
    except GitError:
        return ""


