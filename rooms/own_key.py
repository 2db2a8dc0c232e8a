"""Profiles that carry their creator's own provider key: they spend that person's account,
so they work only in rooms their creator may act in: assigned, run (by a worker or
through the gateway endpoint) and given gateway keys there, nowhere else. The one rule;
services and the endpoint ask it."""

from __future__ import annotations

from agents.models import AgentProfile
from rooms.checks import may_act
from rooms.errors import RoomPermissionError
from rooms.models import Room
from rooms.selectors import membership_of


def may_spend_here(agent: AgentProfile, room: Room | int) -> bool:
    creator = agent.created_by
    if not agent.api_key or creator is None:
        return True  # the hub's own keys, or a profile the operator made outside the pages: theirs to share
    return creator.is_active and may_act(membership_of(room, creator))


def check_may_spend_here(agent: AgentProfile, room: Room | int) -> None:
    if not may_spend_here(agent, room):
        raise RoomPermissionError(f"{agent.name} uses its creator's own provider key: it works only in rooms "
                                  "its creator may act in. Use a profile on the hub's keys, or one with your own.")
