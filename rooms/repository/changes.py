"""A session's change as a whole: its branch against where it left main, file by file,
read from git's objects (never a worktree), for people to review.

The base is main's side of the merge base: while the branch is unmerged, ``main...branch``
(what the branch changed since it last took main in); once the hub merged it, the first
parent of that merge (so a merged session still shows what it brought). The hub's own
``.atrium/`` is left out, as from a review's diff. Every file reads as text (``--text``:
the repository's attributes are the agents' to write, and ``*.py -diff`` would hide a
change as "binary"); a file with NUL bytes is named binary, one past ``SHOWN_MAX_BYTES``
named too large, and neither is shown. Plain Python: paths come in as arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import git, git_bytes
from rooms.repository.hub_files import HUB_OWNED

SHOWN_MAX_BYTES = 512 * 1024  # a file past this (either side) is named, not shown
SHOWN_MAX_LINES = 3_000  # a file's diff is cut after this many lines
ZERO_OID = "0" * 40
DIFF = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "-M")
NOT_HUB_OWNED = ("--", ".", f":(exclude){HUB_OWNED}")


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    old_path: str  # differs from path for a rename
    status: str  # A added, M modified, D deleted, R renamed, T type changed
    added: int
    removed: int
    old_blob: str
    new_blob: str
    size: int  # the larger side's size in bytes

    @property
    def too_large(self) -> bool:
        return self.size > SHOWN_MAX_BYTES


@dataclass(frozen=True, slots=True)
class Change:
    base: str
    tip: str
    files: tuple[FileChange, ...]
    merged_by: str = ""  # the hub's merge commit on main, once merged

    @property
    def added(self) -> int:
        return sum(file.added for file in self.files)

    @property
    def removed(self) -> int:
        return sum(file.removed for file in self.files)


def session_change(repo: Path, branch: str, main: str) -> Change | None:
    """The branch's change, or None when the branch is not there (yet)."""
    tip = git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", cwd=repo, check=False).strip()
    main_tip = git("rev-parse", "--verify", "--quiet", f"refs/heads/{main}^{{commit}}", cwd=repo,
                   check=False).strip()
    if not tip or not main_tip:
        return None
    merged_by = _merge_of(repo, tip, main_tip)
    side = f"{merged_by}^1" if merged_by else main_tip
    base = git("merge-base", side, tip, cwd=repo, check=False).strip() or tip
    return Change(base=base, tip=tip, files=_files(repo, base, tip), merged_by=merged_by)


def _merge_of(repo: Path, tip: str, main_tip: str) -> str:
    """The oldest merge on main's first-parent line that took ``tip`` in, or ""."""
    listed = git("rev-list", "--first-parent", "--merges", "--parents", "--reverse", f"{tip}..{main_tip}",
                 cwd=repo, check=False)
    for line in listed.splitlines():
        commit, *parents = line.split()
        if tip in parents[1:]:
            return commit
    return ""


def _files(repo: Path, base: str, tip: str) -> tuple[FileChange, ...]:
    raw = git(*DIFF, "--raw", "--numstat", "-z", "--abbrev=40", base, tip, *NOT_HUB_OWNED, cwd=repo,
              timeout=300).split("\0")
    entries, counts = [], []
    index = 0
    while index < len(raw) - 1:
        field = raw[index]
        if field.startswith(":"):  # ":old_mode new_mode old_blob new_blob status", then the path(s)
            _old_mode, _new_mode, old_blob, new_blob, status = field[1:].split()
            paths = raw[index + 1: index + (3 if status[0] in "RC" else 2)]
            entries.append((status[0], old_blob, new_blob, paths[0], paths[-1]))
            index += 1 + len(paths)
        else:  # "added\tremoved\tpath", or "added\tremoved\t" then old and new for a rename
            added, removed, path = field.split("\t", 2)
            counts.append((_count(added), _count(removed)))
            index += 1 if path else 3
    sizes = _sizes(repo, {blob for entry in entries for blob in entry[1:3] if blob != ZERO_OID})
    return tuple(FileChange(path=new, old_path=old, status=status, added=added, removed=removed,
                            old_blob=old_blob, new_blob=new_blob,
                            size=max(sizes.get(old_blob, 0), sizes.get(new_blob, 0)))
                 for (status, old_blob, new_blob, old, new), (added, removed) in zip(entries, counts, strict=True))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _sizes(repo: Path, blobs: set[str]) -> dict[str, int]:
    if not blobs:
        return {}
    asked = sorted(blobs)
    answers = git("cat-file", "--batch-check=%(objectname) %(objectsize)", cwd=repo, timeout=300,
                  input="".join(f"{blob}\n" for blob in asked)).splitlines()
    sizes = {}
    for answer in answers:
        oid, _, size = answer.partition(" ")
        if size.isdigit():
            sizes[oid] = int(size)
    return sizes


def file_diffs(repo: Path, change: Change, files: list[FileChange]) -> dict[str, str]:
    """Each shown file's unified diff (its ``diff --git`` header on), by path: one git for
    all of them. Files too large are not asked for; a binary one comes back with NUL bytes
    (the caller names it)."""
    shown = [file for file in files if not file.too_large]
    if not shown:
        return {}
    pathspecs = sorted({f":(literal){path}" for file in shown for path in (file.path, file.old_path)})
    text = git(*DIFF, change.base, change.tip, "--", *pathspecs, cwd=repo, timeout=300)
    chunks = [chunk for chunk in ("\n" + text).split("\ndiff --git ") if chunk]
    # git writes the files in the order --raw listed them, the order `shown` keeps.
    return {file.path: "diff --git " + chunk for file, chunk in zip(shown, chunks, strict=False)}


def change_patch(repo: Path, change: Change) -> bytes:
    """The whole change as a patch ``git apply`` takes, as git wrote it (binary files
    included, base85-encoded)."""
    return git_bytes("diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--binary", "--full-index",
                     change.base, change.tip, *NOT_HUB_OWNED, cwd=repo, timeout=300)
