"""A merge conflict handed back to the session that made it: what the agent is told.

When main moved on while a session worked and its branch no longer merges, the hub
merges main into the branch in the session's worktree and leaves the conflicts there
as markers; the agent resolves them with its own tools, finishes again, the room's
check runs, and the merge is tried again. At most ``MAX_MERGE_ROUNDS`` times: after
that (or when the conflict is in files only the hub writes) the session ends in
``needs_merge`` and a person decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MAX_MERGE_ROUNDS = 3
HUNK_CONTEXT_LINES = 3
MAX_REPORT_CHARS = 8_000
MAX_COMMITS_LISTED = 20


def conflict_hunks(text: str, *, context: int = HUNK_CONTEXT_LINES) -> list[tuple[int, str]]:
    """Each conflicted region of ``text`` (markers included) with ``context`` lines around
    it, as (first line number, text)."""
    lines = text.splitlines()
    hunks, start = [], None
    for number, line in enumerate(lines):
        if line.startswith("<<<<<<<") and start is None:
            start = number
        elif line.startswith(">>>>>>>") and start is not None:
            first, last = max(0, start - context), min(len(lines), number + 1 + context)
            hunks.append((first + 1, "\n".join(lines[first:last])))
            start = None
    return hunks


def conflict_report(*, conflicts: Sequence[str], texts: Mapping[str, str], merged_meanwhile: Sequence[str],
                    round_number: int, target: str) -> str:
    """The message that hands a conflict back to the agent, bounded to MAX_REPORT_CHARS."""
    listed = list(merged_meanwhile[:MAX_COMMITS_LISTED])
    if len(merged_meanwhile) > len(listed):
        listed.append(f"… and {len(merged_meanwhile) - len(listed)} more")
    parts = [f"Your work could not be merged: {target} moved on while you worked "
             f"(merge round {round_number} of {MAX_MERGE_ROUNDS})."]
    if listed:
        parts.append(f"Merged into {target} since your branch started:\n" + "\n".join(f"  {c}" for c in listed))
    if not conflicts:
        parts.append(f"{target} is now merged into your branch without conflicts. Check that your change "
                     "still holds, then finish again: the room's check runs, then the merge.")
        return "\n\n".join(parts)
    parts.append(f"{target} is now being merged into your branch in your worktree. These files hold "
                 "conflict markers (<<<<<<< yours, ======= , >>>>>>> theirs):")
    for path in conflicts:
        hunks = conflict_hunks(texts.get(path, ""))
        if not hunks:
            parts.append(f"{path}: no text conflict shown (deleted on one side, or binary); "
                         "keep the version that should win.")
        for line, hunk in hunks:
            parts.append(f"{path}, from line {line}:\n{hunk}")
    parts.append("Resolve every conflict so both changes hold where they can, remove the markers, "
                 "then finish again: the room's check runs, then the merge. Do not run git merge, "
                 "commit or reset: the hub records the merge when you finish.")
    return _bounded("\n\n".join(parts))


def markers_left_report(paths: Sequence[str]) -> str:
    return ("Conflict markers are still in " + ", ".join(paths) + ". Resolve them (remove every "
            "<<<<<<<, ======= and >>>>>>> line, keeping the right text), then finish again.")


def _bounded(text: str) -> str:
    if len(text) <= MAX_REPORT_CHARS:
        return text
    keep = MAX_REPORT_CHARS - 200
    return (text[:keep] + f"\n\n[… {len(text) - keep:,} more characters of conflicts: read the files "
            "for the rest. Resolve every conflict, then finish again.]")
