"""A session's event log: append-only, broadcast after commit."""

from __future__ import annotations

from django.db import models

from sessions.models.work import Session

# The eval ledger (evals/); imported here so the app registers them.


class SessionEvent(models.Model):
    """Append-only log of what happened in a session; the websocket replays it by seq."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=60)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_sessionevent"
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_seq_per_session")]
        # The room page and its reloads ask every session whether an event of one kind
        # exists (loop.suspected): without it, each lookup reads the session's whole log.
        indexes = [models.Index(fields=["session", "kind"], name="sessionevent_kind")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"
