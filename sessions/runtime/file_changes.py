"""Which files a command changed, whatever made the change (a tool, ``sed -i``, a
heredoc, ``git apply``, ``mv``, a formatter, the agent's own ``git commit``): two
readings of the worktree against its HEAD (rooms/repository/dirty.py), the one before
and the one after, compared. Plain Python: no git, no database.

A reading keeps only the paths that differ from HEAD, with the sha256 of what each
holds, so it stays small however large the worktree. A path that left the set holds
HEAD's content now; a path HEAD itself moved (the agent committed, or checked out)
is named by git between the two HEADs. The hub's own moves of HEAD (its commits, its
bring-ins) start a new reading and are nobody's change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

ADDED, MODIFIED, DELETED, RENAMED = "added", "modified", "deleted", "renamed"
# Inferred from a call the hub did not run: added or modified, not known which (taken as
# made by the session when it is removed again: most such files are an agent's scratch).
WRITTEN = "written"
# Inferred too: put back as HEAD holds it (``git checkout -- path``): no change of the session's.
RESTORED = "restored"


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    kind: str  # added, modified, deleted or renamed
    sha256: str  # of the new content; "" when deleted
    old_path: str = ""  # a rename's former path

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(slots=True)
class Reading:
    """The worktree as last read: its HEAD and, for each path that differs from it, the
    sha256 of what is there ("" for nothing)."""

    head: str = ""
    files: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"head": self.head, "files": dict(self.files)}

    @classmethod
    def from_dict(cls, data: dict | None) -> Reading | None:
        if not data:
            return None
        return cls(head=str(data.get("head", "")), files={str(k): str(v) for k, v in data.get("files", {}).items()})


def changes_between(before: Reading, head: str, dirty: dict[str, tuple[bool, str]], *,
                    moved: Iterable[tuple[str, bool]] = (), content_now: Callable[[str], str],
                    content_before: Callable[[str], str]) -> tuple[list[FileChange], Reading]:
    """What changed from ``before`` to the worktree now (``head``, and ``dirty``: each
    path that differs from it, whether ``head`` has it and the sha256 there), and the
    new reading. ``moved``: the paths git names between the two HEADs, each with
    whether the older HEAD had it; ``content_now``: the sha256 of a path not in
    ``dirty`` (HEAD's content, or "" when HEAD has none there); ``content_before``: the
    sha256 of what the older HEAD held at a path (asked only of files removed, to
    know a rename)."""
    moved = dict(moved)
    changes, removed = [], {}
    for path in sorted(set(before.files) | set(dirty) | set(moved)):
        after = dirty[path][1] if path in dirty else content_now(path)
        if path in before.files:
            existed, changed = before.files[path] != "", before.files[path] != after
        elif path in moved:
            existed, changed = moved[path], True
        else:  # as HEAD had it, and HEAD has not moved under it
            existed, changed = dirty[path][0], True
        if not changed or (not existed and not after):
            continue
        kind = ADDED if not existed else DELETED if not after else MODIFIED
        if kind == DELETED:
            removed[path] = before.files[path] if path in before.files else content_before(path)
        changes.append(FileChange(path=path, kind=kind, sha256=after))
    return _paired_renames(changes, removed), Reading(head=head, files={p: sha for p, (_, sha) in dirty.items()})


def _paired_renames(changes: list[FileChange], removed: dict[str, str]) -> list[FileChange]:
    """A deleted file whose content reappeared under a new path, in the same command,
    was moved: one rename instead of the two."""
    added = {c.sha256: c for c in changes if c.kind == ADDED and c.sha256}
    paired, gone = [], set()
    for change in changes:
        if change.kind == DELETED and (sha := removed.get(change.path)) and sha in added:
            new = added.pop(sha)
            paired.append(FileChange(path=new.path, kind=RENAMED, sha256=new.sha256, old_path=change.path))
            gone |= {change.path, new.path}
    rest = [c for c in changes if c.path not in gone]
    return sorted(rest + paired, key=lambda c: c.path)


def paths_changed(records: Iterable[dict]) -> list[str]:
    """The paths a session's change records (``FileChange.to_dict``s, oldest first)
    leave changed, as git's diff of its branch names them: a file made and removed
    again within the session is not among them, nor one put back as HEAD holds it
    (until a later record changes it again); a rename's old path is (as removed).

    Inferred records name folders too: a folder removed (``rm -r``) removes what the
    records have under it, and stands for the rest unless the session made all of
    that; a folder restored (``git checkout .``) restores what of it they know was there
at the start (a file the session made stays)."""
    there: dict[str, list[bool]] = {}  # path -> [there at the start, there now]
    clean: set[str] = set()  # put back as HEAD holds them
    for record in records:
        kind, path = record.get("kind"), record.get("path", "")
        inside = [p for p in there if _under(p, path)] if record.get("inferred") and kind in (DELETED, RESTORED) else []
        if kind == RESTORED:  # what git put back was in HEAD (or the index)
            for name in [name for name in inside if there[name][0]]:  # a new file under it stays
                there[name][1] = True
                clean.add(name)
            there[path] = [True, True]
            clean.add(path)
            continue
        clean.difference_update([*inside, path, record.get("old_path", "")])
        for name in inside:
            there[name][1] = False
        if inside and path not in there and not any(there[name][0] for name in inside):
            continue  # a folder of the session's own making: gone with what the records have of it
        sides = [(record.get("old_path", ""), True, False)] if kind == RENAMED else []
        sides.append((path, kind not in (ADDED, RENAMED, WRITTEN), kind != DELETED))
        for side, before, after in sides:
            if side:
                there.setdefault(side, [before, after])[1] = after
    return sorted(path for path, (start, now) in there.items() if (start or now) and path not in clean)


def _under(path: str, folder: str) -> bool:
    return path != folder and (folder == "." or path.startswith(f"{folder}/"))
