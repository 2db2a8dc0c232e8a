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
from rooms.repository.upstream import (
    UP_TO_DATE,
    Upstream,
    UpstreamError,
    check_upstream_url,
    export_commit,
    fetch_into_main,
    push,
)
from rooms.repository.worktrees import WorktreeError
from rooms.services import upstream_said

logger = logging.getLogger(__name__)


def link_of(room: Room) -> RoomUpstream | None:
    return RoomUpstream.objects.select_related("room").filter(room=room).first()


def _upstream(link: RoomUpstream) -> Upstream:
    """The link as git uses it, if its host is still one the operator allows."""
    try:
        check_upstream_url(link.url, settings.ATRIUM_UPSTREAM_HOSTS)
    except ValueError as exc:
        raise UpstreamError(f"the upstream is no longer reachable from this hub: {exc}") from None
    return Upstream(url=link.url, branch=link.branch, token=link.token, max_bytes=settings.ATRIUM_UPLOAD_MAX_BYTES,
                    deploy_key=link.deploy_key, known_hosts=link.known_hosts)


def _forge(link: RoomUpstream) -> forges.Forge:
    if link.api_url:
        try:
            check_upstream_url(link.api_url, settings.ATRIUM_UPSTREAM_HOSTS)
        except ValueError as exc:
            raise forges.ForgeError(f"the forge's API is no longer reachable from this hub: {exc}") from None
    return forges.forge_for(link.forge, link.url, link.token, api_url=link.api_url)


def _tell(link: RoomUpstream, said: str) -> None:
    """Said in the room, and kept on the link as its last word."""
    upstream_said(room=link.room, text=said)
    RoomUpstream.objects.filter(pk=link.pk).update(last_said=said[:500], last_at=timezone.now())


def bring_in(room: Room, *, tell_unchanged: bool = False) -> str | None:
    """Fetch the upstream and bring it into main; what happened, or None for a room
    with no upstream. Told to the room unless nothing changed (or ``tell_unchanged``:
    a person asked)."""
    link = link_of(room)
    if link is None:
        return None
    try:
        upstream = _upstream(link)
        said = fetch_into_main(Path(room.repo_path), upstream, main=room.default_branch,
                               max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
                               max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES)
    except (UpstreamError, GitError, WorktreeError) as exc:
        said = f"The upstream could not be brought in ({_scrub(link, str(exc))}); {room.default_branch} stays " \
               "as the hub has it."
        _tell(link, said)
    else:
        if said != UP_TO_DATE:
            _tell(link, f"Upstream: {said}.")
        elif tell_unchanged:
            _tell(link, f"Upstream: {room.default_branch} is already {UP_TO_DATE}.")
    return said


def give_work(room: Room, *, branch: str) -> str | None:
    """After a merge: give the upstream main's change (or the session's), as the room
    says: ``export_commit``, on the upstream's newest tip and without the hub's own files;
    what happened, or None when the room has no upstream or proposes instead."""
    link = link_of(room)
    if link is None or link.after_work == RoomUpstream.AfterWork.PROPOSE:
        return None
    repo = Path(room.repo_path)
    whole_main = link.after_work == RoomUpstream.AfterWork.PUSH_MAIN
    remote = link.branch if whole_main else branch
    try:
        upstream = _upstream(link)
        exported = export_commit(repo, upstream, room.default_branch if whole_main else branch)
        said = f"Upstream: {push(repo, upstream, exported, remote, force=not whole_main)}."
    except (UpstreamError, GitError) as exc:
        said = f"The work could not be pushed to the upstream's {remote}: {_scrub(link, str(exc))}"
    _tell(link, said)
    return said


def _scrub(link: RoomUpstream, text: str) -> str:
    return Upstream(url=link.url, branch=link.branch, token=link.token).scrub(text)


def proposes(room: Room) -> bool:
    link = link_of(room)
    return link is not None and link.after_work == RoomUpstream.AfterWork.PROPOSE


def propose(room: Room, *, branch: str, title: str, body: str) -> forges.Proposal | None:
    """Push the session's change (``export_commit``: on the upstream's tip, without the
    hub's own files) to the upstream as ``branch`` and open a pull (merge) request for it
    on the room's forge, or find the one already open for it (a session run again); None,
    said in the room, when a step failed."""
    link = link_of(room)
    try:
        upstream = _upstream(link)
        repo = Path(room.repo_path)
        push(repo, upstream, export_commit(repo, upstream, branch), branch, force=True)
        forge = _forge(link)
        proposal = forges.open_proposal(forge, head=branch, base=link.branch, title=title, body=body)
    except (UpstreamError, GitError, forges.ForgeError, ValueError) as exc:
        said = f"The work could not be proposed upstream: {_scrub(link, str(exc))}"
        _tell(link, said)
        return None
    said = f"Upstream: proposed {branch} as {proposal.url}."
    _tell(link, said)
    return proposal


def proposal_now(room: Room, number: int) -> forges.Proposal:
    """A proposal's state as its forge says now (ForgeError when it cannot be read)."""
    link = link_of(room)
    if link is None or not link.forge:
        raise forges.ForgeError("The room names no forge.")
    return forges.proposal_state(_forge(link), number)
