"""Review before merge: what the reviewer is given and what the author is told.

When a room has a reviewer (agents.models.RoomAgent.reviewer), a session whose check
passed does not merge at once: its work is committed on its branch and a review round
opens. The reviewer agent, in a read-only session rooted at the author's worktree, gets
the task's intent (its intent file), the diff against main and the check's output, and
ends the round with the ``review`` tool: approve, or request changes with reasons. The
author session parks meanwhile; an approval lets its next unit merge, requested changes
reach it as a message and it works on, finishes again, passes the check again, and a new
round opens. ``MAX_REVIEW_ROUNDS`` bounds that: changes still requested after the last
round end the session ``failed``, its branch kept. A person may decide a pending round
instead of the reviewer (approve anyway, or request changes in their own words).

Plain Python: the end of a turn (sessions/runtime/turn_end.py) and the host decide with these.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_REVIEW_ROUNDS = 3
# A parked session (an author awaiting a verdict, a reviewer awaiting the next round)
# looks again at least this often; a decision or a new round wakes it at once.
RECHECK_SECONDS = 600.0
DIFF_MAX_CHARS = 24_000
CHECK_OUTPUT_MAX_CHARS = 4_000

APPROVE = "approve"
REQUEST_CHANGES = "request_changes"
DECISIONS = (APPROVE, REQUEST_CHANGES)

PENDING = "pending"
APPROVED = "approved"
CHANGES_REQUESTED = "changes_requested"

REVIEWER_ROLE = (
    "You review another agent's finished work before it is merged. You cannot change files or "
    "run commands: read what you need with read_file, list_files and search (the author's "
    "worktree, as the author left it). Judge the diff against the task's intent (objective, "
    "definition of done, the person's constraints) and the check's output. End every round "
    "with one call of the review tool: decision approve, or request_changes with reasons the "
    "author can act on (what is wrong, where, what to do). Do not ask for changes the task does "
    "not need."
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A review round as the author sees it."""

    round: int
    state: str  # PENDING, APPROVED or CHANGES_REQUESTED
    reasons: str = ""
    by: str = ""  # the reviewer agent's name, or the person who decided
    by_person: bool = False


@dataclass(frozen=True, slots=True)
class NextRound:
    """What a reviewer session waiting for the next round finds: a brief to review,
    nothing yet (``brief`` and ``over`` empty), or that there is nothing left (``over``)."""

    round: int = 0
    brief: str = ""
    over: str = ""  # why no round will come (the author merged, ended, was approved)


def verdict_state(decision: str) -> str:
    return APPROVED if decision == APPROVE else CHANGES_REQUESTED


def review_brief(*, author: str, session_id: int, title: str, round_number: int, diff: str,
                 check_line: str, check_output: str, intent_path: str) -> str:
    """The reviewer's material for one round: the intent (where it is), the diff and the
    check, each bounded."""
    if len(diff) > DIFF_MAX_CHARS:
        keep = DIFF_MAX_CHARS - 300
        diff = (diff[:keep] + f"\n[… {len(diff) - keep:,} more characters of the diff: read the changed "
                "files for the rest]")
    check = "The room has no check command."
    if check_line:
        output = check_output[-CHECK_OUTPUT_MAX_CHARS:]
        check = f"The room's check passed: {check_line}\n{output}".rstrip()
    return "\n\n".join([
        f"Review round {round_number} of {MAX_REVIEW_ROUNDS}: {author}'s work (session {session_id}) on "
        f"the task “{title}”. The task's intent is in your intent file ({intent_path}).",
        f"The diff of the author's branch against main:\n```diff\n{diff.rstrip() or '(no changes)'}\n```",
        check,
        "Read what you need, then call review with decision approve or request_changes, and your reasons.",
    ])


def changes_message(verdict: Verdict) -> str:
    """What the author is told when changes are requested (by the reviewer agent)."""
    return (f"[Review round {verdict.round} of {MAX_REVIEW_ROUNDS}, from the reviewer agent {verdict.by}: "
            f"changes requested]\n{verdict.reasons}\n\nAddress them, then finish again: the room's check "
            "runs, then a new review round.")


def person_changes_text(verdict: Verdict) -> str:
    """A person's request for changes, in their words (kept as a decision)."""
    return (f"Changes requested in review round {verdict.round} of {MAX_REVIEW_ROUNDS}: {verdict.reasons}\n"
            "Address them, then finish again: the room's check runs, then a new review round.")


def exhausted_reason(verdict: Verdict) -> str:
    return (f"the reviewer still requests changes after {MAX_REVIEW_ROUNDS} review rounds; the branch is "
            f"kept: {verdict.reasons[:1500]}")
