"""Review before merge: rounds, verdicts and people's overrides."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import AgentProfile
from sessions.models.work import Session

# The eval ledger (evals/); imported here so the app registers them.


class Review(models.Model):
    """One review round of a session's finished work (sessions/runtime/reviews.py): the
    reviewer agent's verdict, or a person's who decided instead."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        CHANGES_REQUESTED = "changes_requested", "changes requested"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="reviews")  # the author's
    round = models.PositiveIntegerField()
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    reasons = models.TextField(blank=True)
    # What the reviewer was given: the diff, the check's output, where the intent is.
    brief = models.TextField(blank=True)
    reviewer = models.ForeignKey(AgentProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reviewer_session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="reviews_given")
    # A person decided the round instead of the reviewer (approve anyway, or their own request).
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agents_review"
        ordering = ["session", "round"]
        constraints = [models.UniqueConstraint(fields=["session", "round"], name="one_review_per_round")]

    def __str__(self) -> str:
        return f"review {self.round} of session {self.session_id} ({self.state})"
