"""A session's work proposed upstream instead of merged: the pull (merge) request its
room's forge opened for its branch (rooms/upstream_link.py), and its state as last read."""

from __future__ import annotations

from django.db import models

from sessions.models.work import Session


class SessionProposal(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        MERGED = "merged"
        CLOSED = "closed"

    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="proposal")
    number = models.PositiveIntegerField()
    url = models.URLField(max_length=500)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    checked_at = models.DateTimeField(auto_now=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"#{self.number} for session {self.session_id} ({self.state})"
