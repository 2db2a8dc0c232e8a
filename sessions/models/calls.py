"""Each provider call a session made: tokens as reported, the projection, the cost."""

from __future__ import annotations

from django.db import models

from sessions.models.work import Session

# The eval ledger (evals/); imported here so the app registers them.


class ProviderCall(models.Model):
    """One model request of a session, as the provider reported it."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="provider_calls")
    step = models.PositiveIntegerField()
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField(default=0, help_text="Every input token, cached ones included.")
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0, help_text="Reasoning tokens included.")
    reasoning_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    prefix_hash = models.CharField(max_length=64, blank=True)
    # "step" (the agent's turn) or "handoff" (the prose of a new segment's handoff).
    purpose = models.CharField(max_length=10, default="step")
    projected_tokens = models.PositiveIntegerField(default=0, help_text="The gateway's projection of input_tokens.")
    cost_usd = models.DecimalField(
        max_digits=16, decimal_places=10, null=True, blank=True,
        help_text="At the price table's (or the agent profile's) prices; empty: the model has no price.",
    )
    # What the request was made of: bytes and tokens per part (observations/gateway/breakdown.py).
    prefix = models.JSONField(default=dict, blank=True)
    # The request as sent (observations.Blob of serialize_request), when the agent records requests.
    request_sha256 = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_providercall"
        ordering = ["session", "id"]

    def __str__(self) -> str:
        return f"{self.model} step {self.step}: {self.input_tokens} in / {self.output_tokens} out"
