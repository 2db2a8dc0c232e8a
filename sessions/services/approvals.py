"""A room's approval rules, and the approvals sessions ask people for: requested,
decided once (compare-and-swap), expired."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from rooms.checks import check_can_configure, check_is_staff
from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Message, Room
from rooms.selectors import check_may_act_in, membership_of
from rooms.services import message_post
from sessions.approval_rules import rule_checked, rule_describe
from sessions.events import session_event_append
from sessions.models import (
    Approval,
    ApprovalRule,
    Session,
)
from sessions.runtime import states
from sessions.services.lifecycle import session_wake


@transaction.atomic
def approval_rule_create(*, room: Room, actor: AbstractBaseUser, tool: str, path_glob: str = "",
                         command_prefix: str = "", decision: str) -> ApprovalRule:
    """An owner adds a rule; running sessions apply it from their next tool call."""
    _check_can_configure(room, actor)
    rule = rule_checked(tool=tool, path_glob=path_glob, command_prefix=command_prefix, decision=decision)
    created = ApprovalRule.objects.create(room=room, created_by=actor, **rule)
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} added an approval rule: {created.decision} {rule_describe(created)}.")
    return created


@transaction.atomic
def approval_rule_delete(*, room: Room, actor: AbstractBaseUser, rule_id: int) -> None:
    _check_can_configure(room, actor)
    rule = ApprovalRule.objects.filter(room=room, pk=rule_id).first()
    if rule is None:
        raise RoomError("That rule is not in this room (removed already?).", code="not_found")
    rule.delete()
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} removed an approval rule: {rule.decision} {rule_describe(rule)}.")


def _check_can_configure(room: Room, user: AbstractBaseUser) -> None:
    membership = membership_of(room, user)
    if membership is None:
        raise RoomPermissionError("You are not a member of this room.")
    check_can_configure(membership)


@transaction.atomic
def approval_request(*, session: Session, call_id: str, tool: str, arguments: dict) -> Approval:
    timeout = timedelta(seconds=settings.ATRIUM_APPROVAL_TIMEOUT_SECONDS)
    approval, created = Approval.objects.get_or_create(
        session=session, call_id=call_id,
        defaults={"tool": tool, "arguments": arguments, "expires_at": timezone.now() + timeout},
    )
    if created:
        session_event_append(session, "approval.requested", {
            "approval": approval.pk, "call_id": call_id, "tool": tool, "arguments": arguments,
            "expires_at": approval.expires_at.isoformat(),
        })
    return approval


@transaction.atomic
def approval_decide(*, approval: Approval, actor: AbstractBaseUser, decision: str, as_staff: bool = False) -> Approval:
    """approve / deny / always (approve, and the same kind of call for the rest of the
    session: see sessions.runtime.approvals.always_rule).

    Compare-and-swap on the pending state: a second click, or a decision racing the
    timeout, changes nothing. The decision is the only path to execution. ``as_staff``:
    ``actor`` decides from the admin, as staff, without being a member of the room.
    """
    if decision not in {"approve", "deny", "always"}:
        raise RoomError("Decide approve, deny or always.", code="invalid")
    session = approval.session
    if as_staff:
        check_is_staff(actor)
    else:
        check_may_act_in(session.task.room, actor)
    session.refresh_from_db(fields=["state"])
    if session.state in states.TERMINAL:
        raise RoomError(f"This session has ended ({session.get_state_display().lower()}): there is nothing left "
                        "to approve.", code="ended")
    state = Approval.State.DENIED if decision == "deny" else Approval.State.APPROVED
    updated = Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
        state=state, always=decision == "always", decided_by=actor, decided_at=timezone.now()
    )
    if updated != 1:
        raise RoomError("This call was already decided.", code="decided")
    approval.refresh_from_db()
    session_event_append(session, "approval.decided", {
        "approval": approval.pk, "call_id": approval.call_id, "state": state, "always": approval.always,
        "by": actor.get_username(),
    })
    session.refresh_from_db(fields=["state"])
    session_wake(session, person=True)
    return approval


@transaction.atomic
def approvals_expire(now=None) -> int:
    """Deny every request nobody answered in time, and wake their sessions."""
    now = now or timezone.now()
    expired = 0
    # Beat's sweep calls this every few seconds: the sessions' JSON state stays unread.
    for approval in Approval.objects.select_related("session", "session__task").filter(
        state=Approval.State.PENDING, expires_at__lte=now
    ).defer("session__gateway_state", "session__runtime_state", "session__analysis"):
        if Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
            state=Approval.State.EXPIRED, decided_at=now
        ):
            expired += 1
            session_event_append(approval.session, "approval.decided", {
                "approval": approval.pk, "call_id": approval.call_id, "state": "expired", "by": "",
            })
            session_wake(approval.session)
    return expired
