from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from agents.runtime import states

MODEL_PROVIDERS = ("openai", "anthropic", "replay")


def validate_model_spec(value: str) -> None:
    """``openai:<model>``, ``anthropic:<model>`` or ``replay:<file>``, without spaces; a
    replay file is named, never pathed: it is looked up in the hub's replay folder."""
    provider, colon, name = value.partition(":")
    if not colon or provider not in MODEL_PROVIDERS or not name or any(c.isspace() for c in value):
        raise ValidationError(
            "%(value)r is not a model spec: write openai:<model>, anthropic:<model> or replay:<file>.",
            params={"value": value},
            code="model_spec",
        )
    if provider == "replay" and ("/" in name or "\\" in name or name.startswith(".") or "\0" in name):
        raise ValidationError(
            "%(value)r: a replay: model names a file in the hub's replay folder (e.g. "
            "replay:demo-fix-median.json), not a path.",
            params={"value": value},
            code="replay_path",
        )


def validate_model_spec_list(value: str) -> None:
    for spec in (part.strip() for part in value.split(",")):
        if spec:
            validate_model_spec(spec)


class EvictionPolicy(models.TextChoices):
    ON_DEMAND = "on_demand", "on demand (default)"
    EAGER = "eager", "eager (comparison only)"
    NONE = "none", "none (never evict)"


class AgentProfile(models.Model):
    name = models.CharField(max_length=80, unique=True)
    role_prompt = models.TextField(blank=True)
    model = models.CharField(
        max_length=200,
        validators=[validate_model_spec],
        help_text="openai:<model>, anthropic:<model> or replay:<file>, e.g. anthropic:claude-sonnet-4-5.",
    )
    context_window = models.PositiveIntegerField(
        default=128_000, validators=[MinValueValidator(1024)], help_text="Tokens the model accepts per request."
    )
    output_budget = models.PositiveIntegerField(
        default=8_000, validators=[MinValueValidator(1)], help_text="Tokens reserved for each reply."
    )
    eviction_policy = models.CharField(
        max_length=20, choices=EvictionPolicy.choices, default=EvictionPolicy.ON_DEMAND
    )
    # Tool names this agent may call; empty means every tool.
    allowed_tools = models.JSONField(default=list, blank=True)
    # Optional per-agent provider settings; keys fall back to the environment.
    base_url = models.CharField(max_length=300, blank=True)
    api_key = models.CharField(max_length=300, blank=True)
    fallback_models = models.CharField(
        max_length=500, blank=True, validators=[validate_model_spec_list], help_text="Comma-separated model specs."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.context_window and self.output_budget and self.output_budget >= self.context_window:
            raise ValidationError({"output_budget": "The output budget must be smaller than the context window."})


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

    # The state machine (names and allowed transitions) lives in agents.runtime.states.
    State = models.TextChoices("State", [(name.upper(), name) for name in states.TRANSITIONS])

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
    # The context gateway's state (observations/gateway/state.py), saved after every step.
    gateway_state = models.JSONField(default=dict, blank=True)
    # The step loop's own state (agents/runtime/state.py): phase, pending calls, waits.
    runtime_state = models.JSONField(default=dict, blank=True)
    # A waiting or awaiting_approval session is looked at again at this time by beat.
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True)
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


class ProviderCall(models.Model):
    """One model request of a session, as the provider reported it."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="provider_calls")
    step = models.PositiveIntegerField()
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    prefix_hash = models.CharField(max_length=64, blank=True)
    projected_tokens = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "id"]

    def __str__(self) -> str:
        return f"{self.model} step {self.step}: {self.input_tokens} in / {self.output_tokens} out"


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
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["session", "call_id"], name="one_approval_per_call")]

    def __str__(self) -> str:
        return f"{self.tool} ({self.state})"

    @property
    def always_scope(self) -> str:
        """What "always, for this session" would approve from now on."""
        from agents.runtime.approvals import always_rule

        return always_rule(self.tool, self.arguments if isinstance(self.arguments, dict) else {}).describe()

    @property
    def runs(self) -> list[str]:
        """For a shell call: each program its line runs (seen through wrappers, shells and
        eval), and what cannot be seen into; the card shows these before anyone decides."""
        from agents.runtime.approvals import describe_line

        command = self.arguments.get("command") if isinstance(self.arguments, dict) else None
        return describe_line(command) if self.tool == "shell" and isinstance(command, str) else []
