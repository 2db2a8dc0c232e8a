from __future__ import annotations

from django.conf import settings
from django.db import models


class EvictionPolicy(models.TextChoices):
    ON_DEMAND = "on_demand", "on demand (default)"
    EAGER = "eager", "eager (comparison only)"
    NONE = "none", "none (never evict)"


class AgentProfile(models.Model):
    name = models.CharField(max_length=80, unique=True)
    role_prompt = models.TextField(blank=True)
    # `openai:<model>`, `anthropic:<model>` or `replay:<file>`.
    model = models.CharField(max_length=200)
    context_window = models.PositiveIntegerField(default=128_000)
    output_budget = models.PositiveIntegerField(default=8_000)
    eviction_policy = models.CharField(
        max_length=20, choices=EvictionPolicy.choices, default=EvictionPolicy.ON_DEMAND
    )
    # Tool names this agent may call; empty means every tool.
    allowed_tools = models.JSONField(default=list, blank=True)
    # Optional per-agent provider settings; keys fall back to the environment.
    base_url = models.CharField(max_length=300, blank=True)
    api_key = models.CharField(max_length=300, blank=True)
    fallback_models = models.CharField(max_length=500, blank=True, help_text="Comma-separated model specs.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RoomAgent(models.Model):
    """An agent assigned to a room."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="room_agents")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="room_agents")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "agent"], name="agent_once_per_room")]

    def __str__(self) -> str:
        return f"{self.agent} in {self.room}"


class Task(models.Model):
    """What a person asks for in a room; its intent file lives in the room's repository."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="tasks")
    title = models.CharField(max_length=200)
    objective = models.TextField()
    definition_of_done = models.TextField(blank=True)
    prerequisites = models.TextField(blank=True)
    # The person's constraints in their own words; never rewritten.
    constraints = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title

    @property
    def intent_path(self) -> str:
        """Path of the intent file, relative to the room repository."""
        return f".atrium/tasks/{self.pk}/intent.md"


class Session(models.Model):
    """One attempt of one agent at one task."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        AWAITING_APPROVAL = "awaiting_approval"
        WAITING = "waiting"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        TIMED_OUT = "timed_out"
        NEEDS_MERGE = "needs_merge"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    agent = models.ForeignKey(AgentProfile, on_delete=models.PROTECT, related_name="sessions")
    attempt = models.PositiveIntegerField(default=1)
    previous = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retry"
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    reason = models.TextField(blank=True)
    # Worker lease: whoever holds an unexpired lease is the only one running the loop.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    time_limit_seconds = models.PositiveIntegerField(default=3600)
    branch = models.CharField(max_length=200, blank=True)
    worktree_path = models.CharField(max_length=500, blank=True)
    # Last committed step; the loop resumes after it.
    step = models.PositiveIntegerField(default=0)
    tokens_input = models.PositiveBigIntegerField(default=0)
    tokens_cached = models.PositiveBigIntegerField(default=0)
    tokens_output = models.PositiveBigIntegerField(default=0)
    # The gateway's scalar state (epoch, anchor, postponements, intent copy, ...).
    gateway_state = models.JSONField(default=dict, blank=True)
    last_event_seq = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "agent", "attempt"], name="one_attempt_number")
        ]

    def __str__(self) -> str:
        return f"{self.agent} on {self.task} (attempt {self.attempt})"


class SessionEvent(models.Model):
    """Append-only log of what happened in a session; the websocket replays it by seq."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=60)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_seq_per_session")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"
