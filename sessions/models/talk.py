"""What agents say to each other in a room: a post's mentions, delivered at a boundary."""

from __future__ import annotations

from django.db import models

from agents.models import AgentProfile
from sessions.models.work import Session


class AgentMention(models.Model):
    """An agent's room post that names another agent, for one of that agent's live
    sessions in the room: delivered at the session's next step boundary, marked as an
    agent's words, unless the mention guard (sessions/runtime/mentions.py) stopped it."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        STOPPED = "stopped"

    message = models.ForeignKey("rooms.Message", on_delete=models.CASCADE, related_name="+")
    sender = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="+")
    sender_session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="agent_mentions")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    reason = models.TextField(blank=True, help_text="Why the guard stopped it.")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agents_agentmention"
        ordering = ["session", "id"]
        constraints = [models.UniqueConstraint(fields=["message", "session"], name="one_mention_per_session")]
        # The guard counts a pair's recent mentions at every agent post that names an agent.
        indexes = [models.Index(fields=["sender", "created_at"], name="agent_mention_pairs")]

    def __str__(self) -> str:
        return f"{self.sender} -> session {self.session_id} ({self.state})"


class SessionMessage(models.Model):
    """A room message bound to one session: a steer the session took at a boundary (or
    that a person sent it from its page), or a post its agent made. Rooms' messages name
    their agent, never a session: sessions sit above rooms (docs/architecture.md)."""

    message = models.OneToOneField("rooms.Message", primary_key=True, on_delete=models.CASCADE,
                                   related_name="session_link")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")

    def __str__(self) -> str:
        return f"message {self.message_id} -> session {self.session_id}"


def message_session_id(message) -> int | None:
    """The session ``message`` is bound to, if any."""
    try:
        return message.session_link.session_id
    except SessionMessage.DoesNotExist:
        return None
