"""Profiles that spend their creator's own account: a provider key of their own, or a
base URL of their own (a server that trusts them, reached from the hub). They work only
where their creator put them: in rooms their creator assigned them to and may still act
in, run (by a worker, a reviewer or through the gateway endpoint) and given gateway
keys there, nowhere else. Being added to someone's room is not consent: an owner may add
anyone. The one rule; services, workers and the endpoint ask it."""

from __future__ import annotations

import os

from agents.models import AgentProfile
from agents.providers.factory import operator_url
from rooms.checks import may_act
from rooms.errors import RoomPermissionError
from rooms.models import Room, RoomAgent
from rooms.selectors import membership_of


def spends_its_creators(agent: AgentProfile) -> bool:
    """Whether ``agent`` spends its creator's account rather than the operator's."""
    if agent.created_by_id is None:
        return False  # a profile the operator made outside the pages: theirs to share
    return bool(agent.api_key) or (bool(agent.base_url) and not operator_url(agent.base_url, os.environ))


def may_assign(agent: AgentProfile, actor) -> bool:
    return not spends_its_creators(agent) or agent.created_by_id == actor.pk


def may_spend_here(agent: AgentProfile, room: Room | int, *, creator_allows: bool | None = None) -> bool:
    """``creator_allows``: what this asks of the creator, as a query already read it (the
    gateway key's look-up, endpoint/keys.py)."""
    if not spends_its_creators(agent):
        return True
    if creator_allows is not None:
        return creator_allows
    creator = agent.created_by
    room_id = room.pk if isinstance(room, Room) else room
    return (creator.is_active and may_act(membership_of(room_id, creator))
            and RoomAgent.objects.filter(room_id=room_id, agent=agent, added_by=creator).exists())


def check_may_assign(agent: AgentProfile, actor) -> None:
    if not may_assign(agent, actor):
        raise RoomPermissionError(f"{agent.name} spends its creator's own account (its own key or server): only "
                                  "they may assign it to a room. Use a profile on the hub's keys, or one of yours.")


def check_may_spend_here(agent: AgentProfile, room: Room | int) -> None:
    if not may_spend_here(agent, room):
        raise RoomPermissionError(f"{agent.name} spends its creator's own account (its own key or server): it "
                                  "works only in rooms its creator assigned it to and may act in. Use a profile "
                                  "on the hub's keys, or one of yours.")
