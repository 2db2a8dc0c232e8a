"""What a repository from outside (an uploaded bundle, a copied folder) may bring in.

Checked on git's objects after the fetch and before anything is checked out, for every
branch: a checkout is where a hostile tree becomes files the hub's own code later walks
past. Refused, with what to change: submodules and nested repositories (git would run
their configs' programs), anything under ``.atrium/`` (the hub's intent files: a link
there would make the hub read or write where the repository says), and trees whose
files add up past the checkout cap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from rooms.repository.git import git
from rooms.repository.hub_files import HUB_OWNED
from rooms.repository.trees import Entry, too_large, tree_entries

GITLINK_MODE = "160000"


class ImportRefused(ValueError):
    """The repository brings something the hub does not take in; the message says what."""


def refuse_hostile_content(repo: Path, *, max_checkout_bytes: int, max_checkout_files: int) -> None:
    """Raise ImportRefused when any ref of ``repo`` holds what the hub does not take in;
    a ref of a tree or a blob (not checked out as a branch, but ``git checkout TREE -- .``
    writes it whole) is dropped from the import, and so is one that a branch's short
    name would find first (``refs/tags/main``: the hub names ``main`` and the session
    branches so)."""
    # Every ref a clone brought: its other branches (refs/remotes) and tags too, which a
    # person or an agent may check out or merge later, each peeled to what it names at
    # last (a tag of a tag of a commit is the commit). Each tree is checked once.
    # Names go to git as object ids: a ref's name may hold any character but a newline
    # (spaces of every kind), and a name could mean another ref than the one listed.
    listed = git("for-each-ref", "--format=%(objectname) %(refname)", cwd=repo, timeout=60).split("\n")
    refs = [line.split(" ", 1) for line in listed if line]
    # One git for all of them: per ref, its fully peeled type and its tree ("missing" when
    # it names no commit), in the order asked.
    asked = "".join(f"{oid}^{{}}\n{oid}^{{tree}}\n" for oid, _ref in refs)
    answers = git("cat-file", "--batch-check=%(objecttype) %(objectname)", cwd=repo, timeout=300,
                  input=asked).split("\n")[:2 * len(refs)]
    if len(answers) != 2 * len(refs):
        raise ImportRefused("git could not tell what each of the repository's branches and tags holds.")
    seen: set[str] = set()
    for (_oid, ref), peeled, tree in zip(refs, answers[0::2], answers[1::2], strict=True):
        if not peeled.startswith("commit ") or _shadows_a_branch(ref, [name for _, name in refs]):
            git("update-ref", "--no-deref", "-d", ref, cwd=repo, timeout=60)
            continue
        tree = tree.split()[-1]
        if tree in seen:
            continue
        seen.add(tree)
        with contextlib.closing(tree_entries(repo, tree)) as entries:
            check_tree(entries, where=_shown(ref), max_checkout_bytes=max_checkout_bytes,
                       max_checkout_files=max_checkout_files)


def _shadows_a_branch(ref: str, refs: list[str]) -> bool:
    """Whether git would read a branch's short name as ``ref`` (git looks in ``refs/``
    and ``refs/tags/`` before ``refs/heads/``): a branch of the repository's (its
    clone's ``origin/`` ones are the room's branches-to-be), ``main`` or a session's."""
    if ref.startswith(("refs/heads/", "refs/remotes/")):
        return False
    name = ref.removeprefix("refs/tags/") if ref.startswith("refs/tags/") else ref.removeprefix("refs/")
    return (name == "main" or name.startswith("atrium/") or f"refs/heads/{name}" in refs
            or f"refs/remotes/origin/{name}" in refs)


def _shown(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/remotes/origin/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


def check_tree(entries: Iterable[Entry], *, where: str, max_checkout_bytes: int, max_checkout_files: int,
               hub_files_judged_apart: bool = False) -> None:
    """The decision for one branch's tree, in plain Python, read only as far as it takes.
    ``hub_files_judged_apart``: the tree is a room's own (a push), whose ``.atrium/`` holds
    the hub's intent files; whether they were changed is judged against main instead."""

    def refused_or_kept() -> Iterator[Entry]:
        for entry in entries:
            parts = entry.path.split("/")
            if entry.mode == GITLINK_MODE:
                raise ImportRefused(f"{entry.path} on {where} is a submodule: the hub takes in no submodules "
                                    "(git would run what their configuration says); remove it or vendor its files.")
            if any(part.casefold() == ".git" for part in parts):
                raise ImportRefused(f"{entry.path} on {where} is inside a nested .git folder; remove it.")
            if parts[0] == HUB_OWNED and not hub_files_judged_apart:
                raise ImportRefused(f"{entry.path} on {where}: the repository ships {HUB_OWNED}/, where only the "
                                    f"hub writes (its intent files); remove it (git rm -r {HUB_OWNED}) and try again.")
            yield entry

    if reason := too_large(refused_or_kept(), max_bytes=max_checkout_bytes, max_files=max_checkout_files):
        raise ImportRefused(f"{where} is too large: {reason}.")
