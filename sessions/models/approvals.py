"""A room's approval rules and the approvals a session asked people for."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions.models.work import Session

# The eval ledger (evals/); imported here so the app registers them.


class Decision(models.TextChoices):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class ApprovalRule(models.Model):
    """Per room: what a tool call may do without a person. The strictest match wins."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="approval_rules")
    tool = models.CharField(max_length=60, default="*", help_text="Tool name, or * for every tool.")
    path_glob = models.CharField(max_length=300, blank=True, help_text="e.g. src/**/*.py; empty matches any.")
    command_prefix = models.CharField(max_length=300, blank=True, help_text="For shell, e.g. `python -m pytest`.")
    decision = models.CharField(max_length=5, choices=Decision.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_approvalrule"
        ordering = ["room", "id"]

    def __str__(self) -> str:
        return f"{self.decision} {self.tool} {self.path_glob or self.command_prefix}".strip()


class Approval(models.Model):
    """A tool call waiting for a person; the decision is the only path to execution."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        EXPIRED = "expired"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="approvals")
    call_id = models.CharField(max_length=100)
    tool = models.CharField(max_length=60)
    arguments = models.JSONField(default=dict)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    always = models.BooleanField(default=False, help_text="Approved for the rest of this session.")
    reason = models.TextField(blank=True, help_text="Why it was denied, in the person's words.")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agents_approval"
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["session", "call_id"], name="one_approval_per_call")]
        # Beat expires pending approvals past their time every few seconds.
        indexes = [models.Index(fields=["state", "expires_at"], name="approval_expiry")]

    def __str__(self) -> str:
        return f"{self.tool} ({self.state})"

    @property
    def always_scope(self) -> str:
        """What "always, for this session" would approve from now on."""
        from sessions.runtime.approvals import always_rule

        return always_rule(self.tool, self.arguments if isinstance(self.arguments, dict) else {}).describe()

    @property
    def runs(self) -> list[str]:
        """For a shell call: each program its line runs (seen through wrappers, shells and
        eval), and what cannot be seen into; the card shows these before anyone decides."""
        from sessions.runtime.approvals import describe_line

        command = self.arguments.get("command") if isinstance(self.arguments, dict) else None
        return describe_line(command) if self.tool == "shell" and isinstance(command, str) else []
