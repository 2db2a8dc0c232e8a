"""What rooms tell the apps above them (agents), which connect receivers from their
``AppConfig.ready``. Rooms never imports agents (docs/architecture.md, "Layers"); these
are the only places where a room's events reach it.

``message_posted``: a message was stored; sent with ``message``, inside the post's
transaction, so a receiver's writes (waking the sessions a steer or mention reaches)
commit or roll back with the message. Receivers send nothing out of the process before
commit.

``member_removed``: a person left a room; sent with ``room_id`` and ``user_id`` inside the
removal's transaction (agents closes their session sockets after commit).

``room_list_annotations``: what the room list shows besides people; sent with
``room_pk`` (an ``OuterRef`` to the listed room), a receiver answers a dict of
annotations (correlated subqueries, e.g. ``rooms.selectors.SubqueryCount``).

``steer_target``: which agent a steer in ``room`` to ``agent_id`` reaches; a receiver
answers the agent if it is assigned to the room, else None. No answer refuses the steer.
"""

from __future__ import annotations

from django.dispatch import Signal

message_posted = Signal()
member_removed = Signal()
room_list_annotations = Signal()
steer_target = Signal()


def assigned_agent(room, agent_id: int):
    """The agent ``agent_id`` if it is assigned to ``room`` (as the receivers of
    ``steer_target`` judge), else None."""
    answers = steer_target.send(sender=type(room), room=room, agent_id=agent_id)
    return next((agent for _receiver, agent in answers if agent is not None), None)
