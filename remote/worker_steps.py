"""What a worker on another machine asks the hub to do on its session's behalf where the
room's repository is (``sessions.worker.room_git``): merge the session's branch into
main, bring the room's upstream in before the session starts, propose the branch
upstream, release the branch from the repository's own worktree. The branch is what the
worker pushed; the checks are the ones a worker beside the repository goes through."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from django.db import connection

from rooms import upstream_link
from rooms.branch_merge import branch_merge, merge_said
from rooms.models import Room
from rooms.repository.handover import worktree_release
from rooms.repository.worktrees import session_branch
from sessions.models import Session

PROPOSAL_TEXT_MAX = 64 * 1024


class StepRefused(ValueError):
    """The request names no step, or says it wrongly; the message says how."""


def worker_step(room: Room, session_id: int, step: str, said: Any) -> dict[str, Any]:
    """The step taken and what came of it, as the worker reads it back."""
    if step not in STEPS:
        raise StepRefused(f"No such step: {step!r} (one of {', '.join(STEPS)}).")
    try:
        session = Session.objects.without_state().select_related("task").get(pk=session_id)
        return STEPS[step](room, session, said if isinstance(said, dict) else {})
    finally:
        if not connection.in_atomic_block:  # a thread of the server's pool: it keeps no connection
            connection.close()


def _merge(room: Room, session: Session, said: dict[str, Any]) -> dict[str, Any]:
    """The branch as the worker pushed it (``tip``), into main."""
    tip = said.get("tip")
    if not isinstance(tip, str) or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", tip):
        raise StepRefused("A merge names the commit the worker pushed: its tip, 40 or 64 hex digits.")
    return merge_said(branch_merge(room, branch=session_branch(session.pk), title=session.task.title,
                                   expect_tip=tip))


def _bring_in(room: Room, session: Session, said: dict[str, Any]) -> dict[str, Any]:
    return {"said": upstream_link.bring_in(room)}


def _propose(room: Room, session: Session, said: dict[str, Any]) -> dict[str, Any]:
    proposal = upstream_link.propose(room, branch=session_branch(session.pk), title=_text(said, "title"),
                                     body=_text(said, "body"))
    return {"proposal": dataclasses.asdict(proposal) if proposal else None}


def _release(room: Room, session: Session, said: dict[str, Any]) -> dict[str, Any]:
    """Before a worker elsewhere makes the session's worktree: the room repository's own
    worktree of it (a worker beside the repository ran it) committed and removed."""
    released = worktree_release(repo=Path(room.repo_path), branch=session_branch(session.pk),
                                message=f"Left by session {session.pk}'s worker beside the repository, for the one "
                                        "that takes it on")
    return {"released": released}


def _text(said: dict[str, Any], name: str) -> str:
    value = said.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > PROPOSAL_TEXT_MAX:
        raise StepRefused(f"A proposal needs its {name}: text of at most {PROPOSAL_TEXT_MAX} characters.")
    return value


STEPS = {"merge": _merge, "bring-in": _bring_in, "propose": _propose, "release": _release}
