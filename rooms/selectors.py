"""Reads. ``access_room`` is the only way a view or consumer loads a room for a user."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import (
    Case,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.http import Http404

from agents.models import AgentProfile
from rooms.checks import check_may_act, may_act
from rooms.models import Membership, Message, Room, RoomAgent

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


def check_may_act_in(room: Room | int, user: AbstractBaseUser | AnonymousUser) -> None:
    """Refuse (RoomPermissionError) anyone who may not act in ``room``: a viewer, a stranger."""
    check_may_act(membership_of(room, user))


def rooms_for_user(user: AbstractBaseUser) -> QuerySet[Room]:
    """The user's rooms for the list page, by name.

    Each room carries ``my_role`` and ``member_count``; the room list page (the hub's)
    adds the counts of the apps above (sessions.selectors.room_list_counts). Every
    count is a correlated subquery (``SubqueryCount``): no joins, no GROUP BY.
    """
    return (
        Room.objects.filter(memberships__user=user)
        .annotate(
            my_role=Subquery(
                Membership.objects.filter(room=OuterRef("pk"), user=user).values("role")[:1]
            ),
            member_count=SubqueryCount(Membership.objects.filter(room=OuterRef("pk"))),
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


class SubqueryCount(Subquery):
    """``(SELECT COUNT(*) FROM <queryset>)`` as a correlated subquery: no joins, no GROUP BY."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) _counted)"
    output_field = IntegerField()

    def __init__(self, queryset: QuerySet) -> None:
        super().__init__(queryset.order_by().values("pk"))


def room_agents(room: Room) -> QuerySet[RoomAgent]:
    return RoomAgent.objects.filter(room=room).select_related("agent").order_by("agent__name")


def assignable_agents(room: Room) -> QuerySet[AgentProfile]:
    """Agent profiles not yet assigned to ``room``, but those an eval run made for its own
    room (one per scenario and run: they would crowd every room's list)."""
    return (AgentProfile.objects.exclude(room_agents__room=room)
            .exclude(room_agents__room__eval_runs__isnull=False).order_by("name"))


def room_agent_for(room: Room, agent_id: int) -> RoomAgent | None:
    return RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()
