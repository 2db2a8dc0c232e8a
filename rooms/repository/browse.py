"""Reading a room's repository at any branch, tag or commit, for people: its refs, a
folder's entries, a file's bytes (bounded), a ref's commits. Read from git's objects,
never a checkout, so nothing a session wrote in a worktree is read, and links are shown
as what they say, never followed.

What people ask for is never handed to git as a revision expression: a ref is one of
the repository's own branch or tag names, or an object id in hex; anything else is not
found (``main@{1}``, ``:/text`` or ``--output=…`` mean nothing here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import GitError, git, git_bytes

HEX = re.compile(r"[0-9a-f]{7,40}")
COMMITS_SHOWN = 50
FIELD, RECORD = "\x1f", "\x1e"


@dataclass(frozen=True, slots=True)
class Ref:
    name: str
    kind: str  # "branch" or "tag"
    commit: str
    subject: str
    when: str  # ISO 8601


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    kind: str  # "tree", "blob", "link" or "submodule"
    size: int


@dataclass(frozen=True, slots=True)
class Commit:
    oid: str
    author: str
    when: str
    subject: str


def refs(repo: Path) -> list[Ref]:
    fields = FIELD.join(("%(refname)", "%(*objectname)", "%(objectname)", "%(contents:subject)",
                         "%(creatordate:iso-strict)"))
    listed = git("for-each-ref", f"--format={fields}{RECORD}", "--sort=-creatordate", "refs/heads", "refs/tags",
                 cwd=repo)
    found = []
    for record in listed.split(RECORD):
        parts = record.strip("\n").split(FIELD)
        if len(parts) != 5:
            continue
        name, peeled, oid, subject, when = parts
        kind = "branch" if name.startswith("refs/heads/") else "tag"
        found.append(Ref(name=name.removeprefix("refs/heads/").removeprefix("refs/tags/"), kind=kind,
                         commit=peeled or oid, subject=subject, when=when))
    return found


def resolve(repo: Path, asked: str, known: list[Ref]) -> str | None:
    """The commit ``asked`` names: a branch or tag of the repository, or a commit's id."""
    for ref in known:
        if ref.name == asked:
            return ref.commit
    if HEX.fullmatch(asked):
        found = git("rev-parse", "--verify", "--quiet", f"{asked}^{{commit}}", cwd=repo, check=False).strip()
        return found or None
    return None


def kind_of(repo: Path, commit: str, path: str) -> str | None:
    """"tree", "blob", "link", "submodule", or None when the commit has no such path."""
    if not path:
        return "tree"
    listed = git("ls-tree", "-z", commit, "--", path, cwd=repo)
    record = listed.split("\0", 1)[0]
    meta, _, name = record.partition("\t")
    if name != path:
        return None
    return _kind(meta.split()[0])


def entries(repo: Path, commit: str, path: str) -> list[Entry]:
    """A folder's entries, folders first, each by name."""
    listed = git("ls-tree", "-z", "-l", commit, "--", f"{path}/" if path else ".", cwd=repo)
    found = []
    for record in listed.split("\0"):
        if not record:
            continue
        meta, _, full = record.partition("\t")
        mode, _type, _oid, size = meta.split()
        found.append(Entry(name=full.rsplit("/", 1)[-1], kind=_kind(mode), size=int(size) if size.isdigit() else 0))
    return sorted(found, key=lambda entry: (entry.kind != "tree", entry.name))


def _kind(mode: str) -> str:
    return {"040000": "tree", "120000": "link", "160000": "submodule"}.get(mode, "blob")


def file_bytes(repo: Path, commit: str, path: str, *, max_bytes: int) -> tuple[int, bytes | None]:
    """A file's size and its bytes (None past ``max_bytes``); a link's bytes are its target."""
    size = int(git("cat-file", "-s", f"{commit}:{path}", cwd=repo).strip())
    if size > max_bytes:
        return size, None
    return size, git_bytes("cat-file", "blob", f"{commit}:{path}", cwd=repo)


def commits(repo: Path, commit: str, *, limit: int = COMMITS_SHOWN) -> list[Commit]:
    try:
        listed = git("log", "--no-color", f"--max-count={limit}",
                     f"--format=%H{FIELD}%an{FIELD}%aI{FIELD}%s{RECORD}", commit, cwd=repo)
    except GitError:
        return []
    found = []
    for record in listed.split(RECORD):
        parts = record.strip("\n").split(FIELD)
        if len(parts) == 4:
            found.append(Commit(*parts))
    return found
