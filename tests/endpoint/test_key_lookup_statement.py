"""The gateway key's look-up is a statement written out (endpoint/keys.py): it must find
what the ORM's query found, and read every column as the ORM reads it, for keys in
every state a key, its maker, its room and its agent's creator can be in."""

from __future__ import annotations

import itertools

import pytest
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q
from django.utils import timezone

from endpoint.keys import _lookup, gateway_key_create
from endpoint.models import GatewayKey
from rooms.models import Membership, RoomAgent
from rooms.own_key import may_spend_here
from rooms.secret_tokens import token_digest
from rooms.services import agent_assign
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ACTING = [Membership.Role.OWNER, Membership.Role.MEMBER]


def orm_lookup(digest: str) -> GatewayKey | None:
    """The look-up as the ORM wrote it before it was written out."""
    assigned = RoomAgent.objects.filter(room_id=OuterRef("room_id"), agent_id=OuterRef("agent_id"))
    maker_acts = Membership.objects.filter(room_id=OuterRef("room_id"), user_id=OuterRef("created_by_id"),
                                           user__is_active=True, role__in=ACTING)
    creator_acts = Membership.objects.filter(room_id=OuterRef("room_id"), user_id=OuterRef("agent__created_by_id"),
                                             user__is_active=True, role__in=ACTING)
    creator_assigned = RoomAgent.objects.filter(room_id=OuterRef("room_id"), agent_id=OuterRef("agent_id"),
                                                added_by_id=OuterRef("agent__created_by_id"))
    key = (GatewayKey.objects.select_related("room", "agent", "created_by")
           .filter(digest=digest, revoked_at__isnull=True).filter(Exists(assigned), Exists(maker_acts))
           .annotate(creator_allows=ExpressionWrapper(Q(Exists(creator_acts), Exists(creator_assigned)),
                                                      output_field=BooleanField())).first())
    if key is None or not may_spend_here(key.agent, key.room, creator_allows=key.creator_allows):
        return None
    return key


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_the_statement_finds_what_the_orms_query_found_and_reads_columns_alike():
    owner, maker, creator = make_user("owner"), make_user("maker"), make_user("creator")
    shared = make_agent("shared", "openai:gpt-4.1", context_window=64_000, allowed_tools=["read_file"])
    own = make_agent("own", "openai:gpt-4.1", owner=creator, api_key="sk-creators-own-0001")
    room = make_room(owner, "Keys", members=[maker, creator], agents=[shared])
    agent_assign(room=room, actor=creator, agent=own)
    tokens = [gateway_key_create(room=room, actor=actor, agent_id=agent.pk, name=f"{actor}-{agent}").token
              for actor, agent in [(maker, shared), (owner, shared), (creator, own)]]
    GatewayKey.objects.filter(digest=token_digest(tokens[1])).update(last_used_at=timezone.now())
    digests = [token_digest(t) for t in tokens] + [token_digest("atr-gw-none")]

    def states():
        """Each state of the maker, the creator, the room's agents and the keys in turn."""
        yield "as made"
        for user, role in itertools.product((maker, creator), ("viewer", "owner", "member")):
            Membership.objects.filter(room=room, user=user).update(role=role)
            yield f"{user} {role}"
        for user in (maker, creator):
            type(user).objects.filter(pk=user.pk).update(is_active=False)
            yield f"{user} deactivated"
            type(user).objects.filter(pk=user.pk).update(is_active=True)
        RoomAgent.objects.filter(room=room, agent=own).update(added_by=owner)
        yield "own agent added by another"
        RoomAgent.objects.filter(room=room, agent=own).update(added_by=creator)
        RoomAgent.objects.filter(room=room, agent=shared).delete()
        yield "shared agent unassigned"
        GatewayKey.objects.filter(digest=digests[2]).update(revoked_at=timezone.now())
        yield "a key revoked"
        Membership.objects.filter(room=room, user=creator).delete()
        yield "creator removed"

    found_any = set()
    for state in states():
        for digest in digests:
            want, got = orm_lookup(digest), _lookup(digest, None)
            assert (want and want.pk) == (got and got.pk), (state, digest)
            if got is not None:
                found_any.add(got.pk)
                for mine, theirs in [(got, want), (got.room, want.room), (got.agent, want.agent),
                                     (got.created_by, want.created_by)]:
                    assert fields(mine) == fields(theirs), state
                    assert not mine._state.adding and mine._state.db == theirs._state.db
    assert len(found_any) == 3  # each key was found in some state, and refused in others


def test_a_key_of_another_room_is_not_found_under_its_url():
    owner = make_user("owner")
    room = make_room(owner, "Here", agents=[make_agent("gpt", "openai:gpt-4.1")])
    token = gateway_key_create(room=room, actor=owner, agent_id=room.room_agents.get().agent_id, name="k").token
    assert _lookup(token_digest(token), room.slug).room == room
    assert _lookup(token_digest(token), "elsewhere") is None
