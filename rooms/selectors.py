"""Reads. ``access_room`` is the only way a view or consumer loads a room for a user."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import (
    Case,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.http import Http404

from agents.models import AgentProfile, RoomAgent, Session, SessionEvent
from agents.runtime import states
from rooms.checks import may_act
from rooms.models import Membership, Message, Room

HISTORY_PAGE_SIZE = 50


@dataclass(frozen=True)
class RoomAccess:
    """A room as seen by one member."""

    room: Room
    membership: Membership

    @property
    def can_post(self) -> bool:
        return may_act(self.membership)

    @property
    def can_manage_members(self) -> bool:
        return self.membership.can_manage_members

    @property
    def can_assign_agents(self) -> bool:
        return may_act(self.membership)

    @property
    def can_configure(self) -> bool:
        """Check command, network access, approval rules: owners only."""
        return self.membership.role == Membership.Role.OWNER


def access_room(user: AbstractBaseUser | AnonymousUser, slug: str) -> RoomAccess:
    """The room ``slug`` if ``user`` belongs to it; Http404 otherwise.

    Non-members get the same answer as for a missing room, so slugs don't leak.
    """
    if not user.is_authenticated:
        raise Http404("No such room.")
    membership = (
        Membership.objects.select_related("room", "room__owner")
        .filter(room__slug=slug, user=user)
        .first()
    )
    if membership is None:
        raise Http404("No such room.")
    return RoomAccess(room=membership.room, membership=membership)


def access_room_by_id(user: AbstractBaseUser | AnonymousUser, room_id: int) -> RoomAccess:
    """Like access_room, for callers that hold a room id (consumers after connect)."""
    if not user.is_authenticated:
        raise Http404("No such room.")
    membership = Membership.objects.select_related("room").filter(room_id=room_id, user=user).first()
    if membership is None:
        raise Http404("No such room.")
    return RoomAccess(room=membership.room, membership=membership)


def membership_of(room: Room | int, user: AbstractBaseUser | AnonymousUser) -> Membership | None:
    """The user's membership of the room, read fresh (a role may have changed since the
    page loaded); None for anyone else, the anonymous included."""
    if not user.is_authenticated:
        return None
    room_id = room.pk if isinstance(room, Room) else room
    return Membership.objects.filter(room_id=room_id, user=user).first()


def rooms_for_user(user: AbstractBaseUser) -> QuerySet[Room]:
    """The user's rooms for the list page, by name.

    Each room carries ``my_role``, ``member_count``, ``agent_count`` and the session
    counts behind the status badges: ``sessions_queued``, ``sessions_running``,
    ``sessions_waiting`` (parked on a job or timer), ``sessions_awaiting_approval``
    (needs a person's decision), ``sessions_needs_merge`` (finished, but its
    branch did not merge cleanly: needs a person too) and ``sessions_loop_suspected``
    (unfinished, and the loop alarm went off).
    """
    sessions = Session.objects.filter(task__room=OuterRef("pk"))
    return (
        Room.objects.filter(memberships__user=user)
        .annotate(
            my_role=Subquery(
                Membership.objects.filter(room=OuterRef("pk"), user=user).values("role")[:1]
            ),
            member_count=_Count(Membership.objects.filter(room=OuterRef("pk"))),
            agent_count=_Count(RoomAgent.objects.filter(room=OuterRef("pk"))),
            sessions_queued=_Count(sessions.filter(state=Session.State.QUEUED)),
            sessions_running=_Count(sessions.filter(state=Session.State.RUNNING)),
            sessions_waiting=_Count(sessions.filter(state=Session.State.WAITING)),
            sessions_awaiting_approval=_Count(sessions.filter(state=Session.State.AWAITING_APPROVAL)),
            sessions_needs_merge=_Count(sessions.filter(state=Session.State.NEEDS_MERGE)),
            sessions_loop_suspected=_Count(sessions.filter(
                ~Q(state__in=states.TERMINAL),
                Exists(SessionEvent.objects.filter(session=OuterRef("pk"), kind="loop.suspected")),
            )),
        )
        .order_by("name")
    )


def room_members(room: Room) -> QuerySet[Membership]:
    """Owners first, then members, then viewers; by username within a role."""
    role_order = Case(
        When(role=Membership.Role.OWNER, then=Value(0)),
        When(role=Membership.Role.MEMBER, then=Value(1)),
        default=Value(2),
    )
    return (
        Membership.objects.filter(room=room)
        .select_related("user")
        .order_by(role_order, "user__username")
    )


def room_agents(room: Room) -> QuerySet[RoomAgent]:
    return RoomAgent.objects.filter(room=room).select_related("agent").order_by("agent__name")


def assignable_agents(room: Room) -> QuerySet[AgentProfile]:
    """Agent profiles not yet assigned to ``room``."""
    return AgentProfile.objects.exclude(room_agents__room=room).order_by("name")


def room_agent_for(room: Room, agent_id: int) -> RoomAgent | None:
    return RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()


def messages_page(room: Room, *, before_seq: int | None = None,
                  limit: int = HISTORY_PAGE_SIZE) -> tuple[list[Message], bool]:
    """Up to ``limit`` messages older than ``before_seq`` (or the newest), oldest first,
    and whether older ones remain."""
    qs = _messages(room)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    newest_first = list(qs.order_by("-seq")[: limit + 1])
    has_older = len(newest_first) > limit
    return list(reversed(newest_first[:limit])), has_older


def messages_after(
    room_id: int, after_seq: int, *, up_to_seq: int | None = None, limit: int | None = None
) -> list[Message]:
    """Messages with ``after_seq < seq [<= up_to_seq]``, oldest first: what a client missed."""
    qs = _messages_by_room_id(room_id).filter(seq__gt=after_seq)
    if up_to_seq is not None:
        qs = qs.filter(seq__lte=up_to_seq)
    qs = qs.order_by("seq")
    return list(qs[:limit] if limit is not None else qs)


def _messages(room: Room) -> QuerySet[Message]:
    return _messages_by_room_id(room.pk)


def _messages_by_room_id(room_id: int) -> QuerySet[Message]:
    return Message.objects.filter(room_id=room_id).select_related("author", "agent")


class _Count(Subquery):
    """``(SELECT COUNT(*) FROM <queryset>)`` as a correlated subquery: no joins, no GROUP BY."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) _counted)"
    output_field = IntegerField()

    def __init__(self, queryset: QuerySet) -> None:
        super().__init__(queryset.order_by().values("pk"))
