"""A room's upstream at work (``RoomUpstream``): brought into main before a session
starts, given the room's work after a merge, or handed a proposal instead of a merge.
Each step says in the room what it came to; none fails a session (the upstream is the
team's, and a forge being down must not undo an agent's work): main simply stays as
the hub has it."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from rooms import forges
from rooms.models import Room, RoomUpstream
from rooms.repository.git import GitError
from rooms.repository.upstream import UP_TO_DATE, Upstream, UpstreamError, fetch_into_main, push
from rooms.repository.worktrees import WorktreeError
from rooms.services import upstream_said

logger = logging.getLogger(__name__)


def link_of(room: Room) -> RoomUpstream | None:
    return RoomUpstream.objects.filter(room=room).first()


def _upstream(link: RoomUpstream) -> Upstream:
    return Upstream(url=link.url, branch=link.branch, token=link.token)


def _record(link: RoomUpstream, said: str) -> None:
    RoomUpstream.objects.filter(pk=link.pk).update(last_said=said[:500], last_at=timezone.now())


def bring_in(room: Room) -> str | None:
    """Fetch the upstream and bring it into main; what happened, or None for a room
    with no upstream. Told to the room unless nothing changed."""
    link = link_of(room)
    if link is None:
        return None
    upstream = _upstream(link)
    try:
        said = fetch_into_main(Path(room.repo_path), upstream, main=room.default_branch,
                               max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
                               max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES)
    except (UpstreamError, GitError, WorktreeError) as exc:
        said = f"The upstream could not be brought in ({upstream.scrub(str(exc))}); {room.default_branch} stays " \
               "as the hub has it."
        upstream_said(room=room, text=said)
    else:
        if said != UP_TO_DATE:
            upstream_said(room=room, text=f"Upstream: {said}.")
    _record(link, said)
    return said


def give_work(room: Room, *, branch: str) -> str | None:
    """After a merge: push main (or the session's branch) to the upstream, as the room
    says; what happened, or None when the room has no upstream or proposes instead."""
    link = link_of(room)
    if link is None or link.after_work == RoomUpstream.AfterWork.PROPOSE:
        return None
    upstream = _upstream(link)
    local, remote = (f"refs/heads/{room.default_branch}", link.branch) \
        if link.after_work == RoomUpstream.AfterWork.PUSH_MAIN else (f"refs/heads/{branch}", branch)
    try:
        said = f"Upstream: {push(Path(room.repo_path), upstream, local, remote)}."
    except UpstreamError as exc:
        said = f"The work could not be pushed to the upstream's {remote}: {exc}"
    upstream_said(room=room, text=said)
    _record(link, said)
    return said


def proposes(room: Room) -> bool:
    link = link_of(room)
    return link is not None and link.after_work == RoomUpstream.AfterWork.PROPOSE


def propose(room: Room, *, branch: str, title: str, body: str) -> forges.Proposal | None:
    """Push the session's branch to the upstream and open a pull (merge) request for it
    on the room's forge; None, said in the room, when either step failed."""
    link = link_of(room)
    upstream = _upstream(link)
    try:
        push(Path(room.repo_path), upstream, f"refs/heads/{branch}", branch)
        if not link.forge:
            said = f"Upstream: pushed {branch}; the room names no forge to open a pull request on."
            upstream_said(room=room, text=said)
            _record(link, said)
            return None
        forge = forges.forge_for(link.forge, link.url, link.token, api_url=link.api_url)
        proposal = forges.open_proposal(forge, head=branch, base=link.branch, title=title, body=body)
    except (UpstreamError, forges.ForgeError, ValueError) as exc:
        said = f"The work could not be proposed upstream: {upstream.scrub(str(exc))}"
        upstream_said(room=room, text=said)
        _record(link, said)
        return None
    said = f"Upstream: proposed {branch} as {proposal.url}."
    upstream_said(room=room, text=said)
    _record(link, said)
    return proposal


def proposal_now(room: Room, number: int) -> forges.Proposal:
    """A proposal's state as its forge says now (ForgeError when it cannot be read)."""
    link = link_of(room)
    if link is None or not link.forge:
        raise forges.ForgeError("The room names no forge.")
    return forges.proposal_state(forges.forge_for(link.forge, link.url, link.token, api_url=link.api_url), number)
