"""What a person's push may change in a room's repository: the rules the git remote's
pre-receive check applies (``rooms.repository.pre_receive``) while the push's objects
wait in git's quarantine, before any ref moves.

Branches and tags only, no name of one kind the other has. ``atrium/`` names are the
sessions' and read-only; main moves forward only (never rewritten nor deleted), as a
merge moves it. Every tip pushed
is held to what an import is (``imported.check_tree``: no submodules, no nested ``.git``,
no checkout past the room's bounds), and none may change ``.atrium/``, where only the hub
writes. The decisions on names are plain Python (``name_refusal``); the rest reads git.
A worker's push (``only_ref``: its session's branch, ``rooms.worker_tokens``) may move
that branch forward and nothing else, held to the same content rules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import GitError, git
from rooms.repository.hub_files import HUB_OWNED
from rooms.repository.imported import ImportRefused, check_tree
from rooms.repository.trees import tree_entries

ZERO_OID = "0" * 40
SESSION_BRANCHES = "refs/heads/atrium/"


class PushRefused(ValueError):
    """The push changes nothing; the message says what to change, one line per ref."""


@dataclass(frozen=True, slots=True)
class RefUpdate:
    old: str
    new: str
    ref: str

    @classmethod
    def parse(cls, line: str) -> RefUpdate:
        old, new, ref = line.split(" ", 2)
        return cls(old=old, new=new, ref=ref)

    @property
    def deletes(self) -> bool:
        return self.new == ZERO_OID

    @property
    def shown(self) -> str:
        return self.ref.removeprefix("refs/heads/").removeprefix("refs/tags/")


def name_refusal(update: RefUpdate, *, main: str, branches: set[str], tags: set[str]) -> str | None:
    """Why this ref may not be changed by a person at all, or None. ``branches`` and
    ``tags``: the names there are, which a new ref may not take the other kind of (git
    reads a short name as a tag first: a tag ``main`` would stand for main to the hub)."""
    kind, _, name = update.ref.removeprefix("refs/").partition("/")
    if kind not in ("heads", "tags") or not name:
        return f"{update.ref}: only branches and tags are pushed to a room"
    if name == "HEAD" or name == "atrium" or name.startswith("atrium/"):
        return f"{name}: atrium/ names are the sessions' own, read-only for people"
    if kind == "heads" and name == main and update.deletes:
        return f"{main} cannot be deleted"
    if not update.deletes:
        if kind == "tags" and (name in branches or name == main):
            return f"tag {name}: a branch has that name; git would read one for the other"
        if kind == "heads" and name in tags:
            return f"branch {name}: a tag has that name; git would read one for the other"
    return None


def worker_name_refusal(update: RefUpdate, *, only_ref: str) -> str | None:
    """Why a worker may not change this ref, or None: its session's branch is all it pushes."""
    if update.ref != only_ref:
        return f"{update.ref}: a worker pushes its session's branch ({only_ref}) and nothing else"
    if update.deletes:
        return f"{update.shown}: a session's branch is not deleted by its worker"
    return None


def check_push(repo: Path, updates: Iterable[RefUpdate], *, main: str, max_checkout_bytes: int,
               max_checkout_files: int, only_ref: str = "") -> None:
    """Raise PushRefused naming every ref of the push that may not be changed as it is.
    ``only_ref``: a worker's push, which may move that ref forward and nothing else."""
    main_ref = f"refs/heads/{main}"
    main_tip = git("rev-parse", "--verify", "--quiet", main_ref, cwd=repo, check=False).strip()
    listed = git("for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags", cwd=repo).splitlines()
    branches = {ref.removeprefix("refs/heads/") for ref in listed if ref.startswith("refs/heads/")}
    tags = {ref.removeprefix("refs/tags/") for ref in listed if ref.startswith("refs/tags/")}
    reasons = []
    for update in updates:
        if only_ref:
            reason = worker_name_refusal(update, only_ref=only_ref)
        else:
            reason = name_refusal(update, main=main, branches=branches, tags=tags)
        if reason is None and not update.deletes:
            reason = _fast_forward_refusal(repo, update, forward_only={main_ref, only_ref}) or content_refusal(
                repo, update.new, shown=update.shown, main_tip=main_tip,
                bounds=(max_checkout_bytes, max_checkout_files))
        if reason:
            reasons.append(reason)
        elif not update.deletes:  # one push may not make a branch and a tag of one name either
            (branches if update.ref.startswith("refs/heads/") else tags).add(update.shown)
    if reasons:
        raise PushRefused("\n".join(reasons))


def _fast_forward_refusal(repo: Path, update: RefUpdate, *, forward_only: set[str]) -> str | None:
    if update.ref in forward_only and update.old != ZERO_OID and not _is_ancestor(repo, update.old, update.new):
        return (f"{update.shown}: not a fast-forward (never rewritten): pull, merge or rebase "
                "onto it, and push again")
    return None


def content_refusal(repo: Path, new: str, *, shown: str, main_tip: str, bounds: tuple[int, int]) -> str | None:
    """Why the commit ``new`` may not come into the room (what a push or an upstream
    brings), or None: held to what an import is, with ``.atrium/`` as main has it."""
    peeled = git("cat-file", "-t", f"{new}^{{}}", cwd=repo, check=False).strip()
    if peeled != "commit":
        return f"{shown}: names a {peeled or 'missing object'}, not a commit"
    max_bytes, max_files = bounds
    try:
        with contextlib.closing(tree_entries(repo, f"{new}^{{tree}}")) as entries:
            check_tree(entries, where=shown, max_checkout_bytes=max_bytes, max_checkout_files=max_files,
                       hub_files_judged_apart=True)
    except ImportRefused as exc:
        return str(exc)
    if main_tip and (changed := _hub_files_changed(repo, main_tip, new)):
        return (f"{shown} changes {changed[0]}: only the hub writes {HUB_OWNED}/ (the tasks' intent "
                "files); take that change out and push again")
    return None


def _hub_files_changed(repo: Path, main_tip: str, new: str) -> list[str]:
    """The ``.atrium/`` paths ``new`` changed since it left main (since main's tip, for
    a history of its own)."""
    base = git("merge-base", main_tip, new, cwd=repo, check=False).strip() or main_tip
    return git("diff", "--name-only", "--no-renames", base, new, "--", HUB_OWNED, cwd=repo).splitlines()


def _is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    try:
        git("merge-base", "--is-ancestor", ancestor, descendant, cwd=repo)
    except GitError:  # 1: not an ancestor; anything else, nothing to build on either
        return False
    return True
