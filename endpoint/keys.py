"""Gateway keys: made and revoked by a room's people, looked up by the endpoint.

A token is ``atr-gw-`` and 43 URL-safe characters, stored as its SHA-256 alone
(``rooms.secret_tokens``).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import (
    Count,
    Prefetch,
    QuerySet,
    Sum,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents.models import AgentProfile
from endpoint.models import GatewayConversation, GatewayKey
from observations.columns import Columns, instances
from rooms.checks import check_is_staff, check_may_act, check_storable_text
from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership, Room, RoomAgent
from rooms.own_key import (
    check_may_spend_here,
    may_spend_here,
    spends_its_creators,
)
from rooms.secret_tokens import could_be, mint, token_digest
from rooms.selectors import check_may_act_in, membership_of

TOKEN_PREFIX = "atr-gw-"
NAME_MAX_LENGTH = 80  # GatewayKey.name's column


@dataclass(frozen=True)
class MadeKey:
    """A new key and its token: the only time the token exists outside the client."""

    key: GatewayKey
    token: str


def may_key(agent: AgentProfile, actor: AbstractBaseUser) -> bool:
    """Whether ``actor`` may make keys for ``agent``. A profile on the hub's provider keys
    is the operator's to share: anyone who may act in the room. One that spends its
    creator's account (its own key or server: rooms.own_key) is spent from anywhere, at
    any volume, through a key: only its creator (or staff)."""
    return not spends_its_creators(agent) or getattr(actor, "is_staff", False) or agent.created_by_id == actor.pk


@transaction.atomic
def gateway_key_create(*, room: Room, actor: AbstractBaseUser, agent_id: int, name: str) -> MadeKey:
    """A key for one of the room's agents (``may_key``): the key does what its maker could
    do from the room page, start the agent's model."""
    check_may_act_in(room, actor)
    name = check_storable_text((name or "").strip(), what="The key's name")
    if not name:
        raise RoomError("A key needs a name (what will use it, e.g. “laptop aider”).", code="invalid")
    if len(name) > NAME_MAX_LENGTH:
        raise RoomError(f"A key's name is at most {NAME_MAX_LENGTH} characters.", code="invalid")
    room_agent = RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()
    if room_agent is None:
        raise RoomError("That agent is not assigned to this room.", code="unknown_agent")
    if not may_key(room_agent.agent, actor):
        raise RoomPermissionError(f"{room_agent.agent.name} spends its creator's own account (its own key or "
                                  "server): only they (or staff) can make gateway keys for it.")
    check_may_spend_here(room_agent.agent, room)
    token = mint(TOKEN_PREFIX)
    key = GatewayKey.objects.create(
        room=room, agent=room_agent.agent, name=name, digest=token_digest(token),
        prefix=token[: len(TOKEN_PREFIX) + 4], created_by=actor,
    )
    return MadeKey(key=key, token=token)


@transaction.atomic
def gateway_key_revoke(*, room: Room, actor: AbstractBaseUser, key_id: int, as_staff: bool = False) -> GatewayKey:
    """Revoke a key of the room: its maker or an owner may (``as_staff``: staff, from the
    admin, without being a member). Requests already running finish; the next one is
    refused. Revoking a revoked key changes nothing."""
    if as_staff:
        check_is_staff(actor)
    else:
        membership = membership_of(room, actor)
        check_may_act(membership)
    key = GatewayKey.objects.select_for_update().filter(room=room, pk=key_id).first()
    if key is None:
        raise RoomError("No such key in this room.", code="unknown_key")
    if not as_staff and key.created_by_id != actor.pk and membership.role != Membership.Role.OWNER:
        raise RoomPermissionError("Only the key's maker or the room's owners can revoke it.")
    if key.revoked_at is None:
        key.revoked_at, key.revoked_by = timezone.now(), actor
        key.save(update_fields=["revoked_at", "revoked_by"])
    return key


CONVERSATIONS_SHOWN = 10  # a key's newest conversations, linked from its row


def room_gateway_keys(room: Room) -> QuerySet[GatewayKey]:
    """The room's keys, each with what it was used for: its conversations (sessions) and
    their tokens, as the sessions recorded them, and its newest conversations
    (``recent_conversations``, with their sessions)."""
    recent = GatewayConversation.objects.select_related("session").order_by("-updated_at", "-pk")
    return GatewayKey.objects.filter(room=room).select_related("agent", "created_by", "revoked_by").annotate(
        conversation_count=Count("conversations"),
        request_count=Coalesce(Sum("conversations__requests"), 0),
        tokens_in=Coalesce(Sum("conversations__session__tokens_input"), 0),
        tokens_out=Coalesce(Sum("conversations__session__tokens_output"), 0),
    ).prefetch_related(Prefetch("conversations", queryset=recent[:CONVERSATIONS_SHOWN], to_attr="recent_conversations"))


async def gateway_key_lookup(token: str | None, *, room_slug: str | None = None) -> GatewayKey | None:
    """The live key ``token`` names, with its room and agent; None for anything else: no
    token, not one of ours, revoked, its agent no longer assigned to its room, its maker
    no longer acting in the room (removed, a viewer, deactivated), one its maker may no
    longer make (``may_key``: the profile took its creator's own provider key), or (with
    ``room_slug``, the room-scoped URLs) a key of another room. One answer for all of
    them, so a caller learns nothing about keys or rooms it has no key for.

    At most ``LOOKUP_SLOTS`` lookups of a process run at once, each on a connection it
    closes when done: a request then holds no database connection while it waits for
    the upstream, so a hundred streaming clients do not take a hundred connections."""
    if not could_be(token, TOKEN_PREFIX):
        return None
    async with _lookup_slots():
        return await sync_to_async(_lookup)(token_digest(token), room_slug)


LOOKUP_SLOTS = 8
LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is for people: a minute's precision
_slots: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}


def _lookup_slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    held = _slots.get(id(loop))
    if held is None or held[0] is not loop:
        held = _slots[id(loop)] = (loop, asyncio.Semaphore(LOOKUP_SLOTS))
    return held[1]


def _lookup(digest: str, room_slug: str | None) -> GatewayKey | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute(_lookup_statement(), [*_ACTING_ROLES, digest, *_ACTING_ROLES])
            row = cursor.fetchone()
        if row is None:
            return None
        key, room, agent, maker = instances(row, _columns())
        key.room, key.agent, key.created_by = room, agent, maker
        if room_slug is not None and room.slug != room_slug:
            return None
        if not may_key(agent, maker) or not may_spend_here(agent, room, creator_allows=bool(row[-1])):
            return None  # made before its profile took its creator's own provider key, or they left
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at >= LAST_USED_EVERY:
            GatewayKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return key
    finally:
        if not connection.in_atomic_block:  # a test's transaction is not ours to close
            connection.close()


_ACTING_ROLES = (Membership.Role.OWNER, Membership.Role.MEMBER)


@functools.cache
def _columns() -> tuple[Columns, ...]:
    return (Columns(GatewayKey, "k"), Columns(Room, "r"), Columns(AgentProfile, "a"),
            Columns(get_user_model(), "u"))


@functools.cache
def _lookup_statement() -> str:
    """The live key of a digest with its room, agent and maker, and whether the agent's
    creator allows it in the room (``may_spend_here``), in one statement written
    out: the ORM's took some 5 ms to build and compile on every request, and 0.2 ms to
    run. A key does what its maker may do from the room page: removed from the room,
    made a viewer or deactivated, the maker's keys stop working with them; and its agent
    must still be assigned to its room. A test holds it to the ORM's query."""
    key, room, agent, maker = _columns()
    member, room_agent = Columns(Membership, "m"), Columns(RoomAgent, "ra")
    user = Columns(get_user_model(), "mu")

    def acts(user_id: str) -> str:  # the one placeholder pair: _ACTING_ROLES
        return (f"EXISTS (SELECT 1 FROM {member.table} JOIN {user.table} ON {user.column('id')} = "
                f"{member.column('user')} WHERE {member.column('room')} = {key.column('room')} AND "
                f"{member.column('user')} = {user_id} AND {user.column('is_active')} AND "
                f"{member.column('role')} IN (%s, %s))")

    def assigned(added_by: str = "") -> str:
        by = f" AND {room_agent.column('added_by')} = {added_by}" if added_by else ""
        return (f"EXISTS (SELECT 1 FROM {room_agent.table} WHERE {room_agent.column('room')} = {key.column('room')} "
                f"AND {room_agent.column('agent')} = {key.column('agent')}{by})")

    return (f"SELECT {key.select()}, {room.select()}, {agent.select()}, {maker.select()}, "
            f"({acts(agent.column('created_by'))} AND {assigned(agent.column('created_by'))}) "
            f"FROM {key.table} JOIN {room.table} ON {room.column('id')} = {key.column('room')} "
            f"JOIN {agent.table} ON {agent.column('id')} = {key.column('agent')} "
            f"JOIN {maker.table} ON {maker.column('id')} = {key.column('created_by')} "
            f"WHERE {key.column('digest')} = %s AND {key.column('revoked_at')} IS NULL "
            f"AND {assigned()} AND {acts(key.column('created_by'))}")


def keyable_agents(room: Room, actor: AbstractBaseUser) -> list[AgentProfile]:
    """The room's agents ``actor`` may make keys for (``may_key``)."""
    return [agent for agent in AgentProfile.objects.filter(room_agents__room=room).order_by("name")
            if may_key(agent, actor)]
