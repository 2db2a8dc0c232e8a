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
    refs = git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=repo, timeout=60).split()
    for ref in refs:
        check_tree(list(tree_entries(repo, ref)), where=ref.removeprefix("refs/heads/"),
                   max_checkout_bytes=max_checkout_bytes)


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
