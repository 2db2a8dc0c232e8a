"""The eval ledger: every eval run with its checks and evidence, and compare verdicts.

Defined here, registered through agents/models.py (the `agents` app owns them).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class EvalBatch(models.Model):
    """One `manage.py eval` invocation: scenarios × runs against one model."""

    label = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200)
    scripted = models.BooleanField(default=False, help_text="A script: model (request checks must be 100%).")
    runs_per_scenario = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_evalbatch"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"eval #{self.pk} {self.model}"


class EvalRun(models.Model):
    class State(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"  # the session did not run to its end (the reason says why)
        SKIPPED = "skipped"  # e.g. no API key for a real model

    batch = models.ForeignKey(EvalBatch, on_delete=models.CASCADE, related_name="runs")
    scenario = models.CharField(max_length=100)
    scenario_version = models.CharField(max_length=12)
    scenario_kind = models.CharField(max_length=40)
    run = models.PositiveIntegerField(default=1)
    model = models.CharField(max_length=200)
    room = models.ForeignKey("rooms.Room", null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_runs")
    session = models.ForeignKey("agent_sessions.Session", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="eval_runs")
    state = models.CharField(max_length=10, choices=State.choices)
    reason = models.TextField(blank=True)
    resets_asked = models.PositiveIntegerField(default=0)
    resets = models.PositiveIntegerField(default=0, help_text="New segments the session really started.")
    requests_checked = models.PositiveIntegerField(default=0)
    request_passed = models.PositiveIntegerField(default=0)
    request_total = models.PositiveIntegerField(default=0)
    behaviour_passed = models.PositiveIntegerField(default=0)
    behaviour_total = models.PositiveIntegerField(default=0)
    # [{family, kind, label, passed, evidence: [..]}], evidence naming request and missing text.
    checks = models.JSONField(default=list)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_evalrun"
        ordering = ["batch", "scenario", "run"]

    def __str__(self) -> str:
        return f"{self.scenario} run {self.run}: {self.state}"


class EvalVerdict(models.Model):
    """What `eval compare A B` (or `replay compare`) concluded for one subject."""

    class Verdict(models.TextChoices):
        HELPED = "helped"
        HURT = "hurt"
        NO_EFFECT = "no observed effect"
        CONFOUNDED = "confounded"

    source = models.CharField(max_length=10, help_text="eval or replay")
    a_label = models.CharField(max_length=300)
    b_label = models.CharField(max_length=300)
    a_batch = models.ForeignKey(EvalBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    b_batch = models.ForeignKey(EvalBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    subject = models.CharField(max_length=300, help_text="scenario, or trajectory/policy/window")
    verdict = models.CharField(max_length=20, choices=Verdict.choices)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_evalverdict"
        ordering = ["-created_at", "subject"]

    def __str__(self) -> str:
        return f"{self.subject}: {self.verdict}"
