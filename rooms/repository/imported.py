"""What a repository from outside (an uploaded bundle, a copied folder) may bring in.

Checked on git's objects after the fetch and before anything is checked out, for every
branch: a checkout is where a hostile tree becomes files the hub's own code later walks
past. Refused, with what to change: submodules and nested repositories (git would run
their configs' programs), anything under ``.atrium/`` (the hub's intent files: a link
there would make the hub read or write where the repository says), and trees whose
files add up past the checkout cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import git
from rooms.repository.worktrees import HUB_OWNED

GITLINK_MODE = "160000"


class ImportRefused(ValueError):
    """The repository brings something the hub does not take in; the message says what."""


@dataclass(frozen=True, slots=True)
class Entry:
    mode: str
    size: int  # 0 for a gitlink
    path: str


def refuse_hostile_content(repo: Path, *, max_checkout_bytes: int) -> None:
    """Raise ImportRefused when any branch of ``repo`` holds what the hub does not take in."""
    # Every ref a clone brought: its other branches (refs/remotes) and tags too, which a
    # person or an agent may check out or merge later. Each tree is checked once.
    listed = git("for-each-ref", "--format=%(refname) %(*objecttype) %(objecttype)", cwd=repo, timeout=60)
    seen: set[str] = set()
    for line in listed.splitlines():
        ref, *types = line.split()
        if "commit" not in types:
            continue  # a tag of a blob or a tree: nothing is checked out from it
        tree = git("rev-parse", f"{ref}^{{tree}}", cwd=repo, timeout=60).strip()
        if tree in seen:
            continue
        seen.add(tree)
        check_tree(list(tree_entries(repo, tree)), where=_shown(ref), max_checkout_bytes=max_checkout_bytes)


def _shown(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/remotes/origin/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


def tree_entries(repo: Path, ref: str):
    out = git("ls-tree", "-r", "-z", "-l", "--full-tree", ref, cwd=repo, timeout=300)
    for record in out.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, _kind, _oid, size = meta.split()
        yield Entry(mode=mode, size=int(size) if size.isdigit() else 0, path=path)


def check_tree(entries: list[Entry], *, where: str, max_checkout_bytes: int) -> None:
    """The decision for one branch's tree, in plain Python."""
    total = 0
    for entry in entries:
        parts = entry.path.split("/")
        if entry.mode == GITLINK_MODE:
            raise ImportRefused(f"{entry.path} on {where} is a submodule: the hub takes in no submodules "
                                "(git would run what their configuration says); remove it or vendor its files.")
        if any(part.casefold() == ".git" for part in parts):
            raise ImportRefused(f"{entry.path} on {where} is inside a nested .git folder; remove it.")
        if parts[0] == HUB_OWNED:
            raise ImportRefused(f"{entry.path} on {where}: the repository ships {HUB_OWNED}/, where only the hub "
                                f"writes (its intent files); remove it (git rm -r {HUB_OWNED}) and try again.")
        total += entry.size
    if total > max_checkout_bytes:
        raise ImportRefused(f"The files of {where} add up to {total // (1024 * 1024)} MB, more than the "
                            f"{max_checkout_bytes // (1024 * 1024)} MB a room's checkout may hold.")
