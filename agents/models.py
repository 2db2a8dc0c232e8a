from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from agents.providers.timeouts import Timeouts
from agents.runtime import states
from observations.gateway.model_spec import ModelSpecError, parse_model_spec
from observations.gateway.prices import ModelPrice, price_for


def validate_model_spec(value: str) -> None:
    """``openai:<model>``, ``anthropic:<model>`` or ``replay:<file>``, as
    observations.gateway.model_spec reads it, said in the form's words."""
    try:
        parse_model_spec(value)
    except ModelSpecError as exc:
        if exc.code == "path":
            raise ValidationError(
                "%(value)r: a replay: model names a file in the hub's replay folder (e.g. "
                "replay:demo-fix-median.json), not a path.",
                params={"value": value},
                code="replay_path",
            ) from None
        raise ValidationError(
            "%(value)r is not a model spec: write openai:<model>, anthropic:<model> or replay:<file>.",
            params={"value": value},
            code="model_spec",
        ) from None


def validate_model_spec_list(value: str) -> None:
    for spec in (part.strip() for part in value.split(",")):
        if spec:
            validate_model_spec(spec)


class EvictionPolicy(models.TextChoices):
    ON_DEMAND = "on_demand", "on demand (default)"
    EAGER = "eager", "eager (comparison only)"
    NONE = "none", "none (never evict)"


def _price_field(what: str) -> models.DecimalField:
    return models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(0)],
        help_text=f"USD per million {what} tokens; blank uses the published list price.",
    )


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
    # Store every request sent to the model (its bytes as a blob, per ProviderCall):
    # evals read back what the model was sent. Off by default: long sessions are large.
    record_requests = models.BooleanField(default=False)
    # Tool names this agent may call; empty means every tool.
    allowed_tools = models.JSONField(default=list, blank=True)
    # Optional per-agent provider settings; keys fall back to the environment.
    base_url = models.CharField(max_length=300, blank=True)
    api_key = models.CharField(max_length=300, blank=True)
    fallback_models = models.CharField(
        max_length=500, blank=True, validators=[validate_model_spec_list], help_text="Comma-separated model specs."
    )
    # How long a call of its model may take (agents.providers.Timeouts): a hung provider
    # holds a worker for no longer than the whole call's limit, retries included.
    connect_timeout_seconds = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1)], help_text="Seconds to connect to the provider.")
    answer_timeout_seconds = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(1)],
        help_text="Seconds one request may wait for the answer to start arriving (then it is retried).")
    call_timeout_seconds = models.PositiveIntegerField(
        default=900, validators=[MinValueValidator(1)],
        help_text="Seconds one model call may take in all, its retries included (then the session fails).")
    # Own prices for this agent's model, USD per million tokens; blank takes the hub's
    # price table (observations/gateway/prices.py). Fallback models always use the table.
    price_input = _price_field("input")
    price_cached_input = _price_field("cached input (a cache read)")
    price_cache_write = _price_field("cache write")
    price_output = _price_field("output (reasoning included)")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(connect=self.connect_timeout_seconds, answer=self.answer_timeout_seconds,
                        call=self.call_timeout_seconds)

    def clean(self) -> None:
        if self.call_timeout_seconds and self.answer_timeout_seconds \
                and self.call_timeout_seconds < self.answer_timeout_seconds:
            raise ValidationError({"call_timeout_seconds": "The whole call's limit must be at least the answer's."})
        if self.context_window and self.output_budget and self.output_budget >= self.context_window:
            raise ValidationError({"output_budget": "The output budget must be smaller than the context window."})
        if self.context_window and self.output_budget:
            from agents.runtime.prompts import WORKING_ROOM_TOKENS, fixed_prompt_tokens

            fixed = fixed_prompt_tokens(role_prompt=self.role_prompt or "")
            needed = fixed + self.output_budget + WORKING_ROOM_TOKENS
            if self.context_window < needed:
                # Every session of such a profile would stop at its first request.
                raise ValidationError({"context_window": (
                    f"A window of {self.context_window:,} tokens cannot hold this agent's fixed prompt (about "
                    f"{fixed:,} tokens: its instructions and tool definitions), its output budget "
                    f"({self.output_budget:,}) and room to work ({WORKING_ROOM_TOKENS:,}): give it at least "
                    f"{needed:,}, or a smaller output budget.")})
        if self.base_url:
            from agents.providers.addresses import AddressRefused, allowed_from, check_base_url

            try:
                check_base_url(self.base_url, allowed_from(os.environ))
            except AddressRefused as exc:
                raise ValidationError({"base_url": str(exc)}) from None
        # The gateway's fold economics need a cache read no dearer than input, and a
        # cache write no cheaper than a read (observations/gateway/economics.py).
        price = self.price_for(self.model) if self.model else None
        if price is not None and price.input:
            if price.cached_input is not None and price.cached_input > price.input:
                raise ValidationError({"price_cached_input": "A cached input token cannot cost more than an input one."})
            if price.cache_write is not None and price.cache_write < (price.cached_input or 0):
                raise ValidationError({"price_cache_write": "A cache write cannot cost less than a cache read."})
        self.spec_warnings = self.check_specs()

    def check_specs(self) -> list[str]:
        """Refuse specs that can never work (e.g. a replay file that does not exist);
        return warnings for what the environment can still fix (a missing API key)."""
        from agents.providers.errors import InvalidModelSpec
        from agents.providers.factory import check_model_spec

        warnings: list[str] = []
        for field, specs in (("model", [self.model]), ("fallback_models", self.fallback_models.split(","))):
            for spec in filter(None, (s.strip() for s in specs)):
                try:
                    validate_model_spec(spec)
                except ValidationError:
                    continue  # the field's own validator says so already
                try:
                    warning = check_model_spec(spec, api_key=self.api_key or None, base_url=self.base_url or None,
                                               replay_dir=settings.REPLAYS_DIR,
                                               script_dir=settings.EVAL_SCRIPTS_DIR)
                except InvalidModelSpec as exc:
                    raise ValidationError({field: str(exc)}) from None
                if warning:
                    warnings.append(warning)
        return warnings

    def price_for(self, spec: str) -> ModelPrice:
        """The price of a call answered by ``spec``: this profile's own prices for its
        model, the table's for any other (a fallback)."""
        price = price_for(spec)
        if spec != self.model:
            return price
        return price.with_overrides(input=self.price_input, cached_input=self.price_cached_input,
                                    cache_write=self.price_cache_write, output=self.price_output)


class RoomAgent(models.Model):
    """An agent assigned to a room."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="room_agents")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="room_agents")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The room's reviewer: finished work passes its review before it merges
    # (agents/runtime/reviews.py). At most one per room; none means review is off.
    reviewer = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["room", "agent"], name="agent_once_per_room"),
            models.UniqueConstraint(fields=["room"], condition=models.Q(reviewer=True), name="one_reviewer_per_room"),
        ]

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


class SessionQuerySet(models.QuerySet):
    def without_state(self) -> SessionQuerySet:
        """Sessions for pages and sweeps: without the saved loop state, which only the
        worker running the session reads (a long session's state is large)."""
        return self.defer(*Session.STATE_FIELDS)


class Session(models.Model):
    """One attempt of one agent at one task."""

    # The state machine (names and allowed transitions) lives in agents.runtime.states.
    State = models.TextChoices("State", [(name.upper(), name) for name in states.TRANSITIONS])

    class Origin(models.TextChoices):
        HUB = "hub"  # run by the hub's workers
        # An agent that runs elsewhere, through the gateway endpoint (agents/endpoint/):
        # its requests drive it, so no worker claims it and the sweep never times it out.
        ENDPOINT = "endpoint"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.HUB)
    agent = models.ForeignKey(AgentProfile, on_delete=models.PROTECT, related_name="sessions")
    # The agent's model when the session started: how long its sessions run is what a
    # fold's economics guess the work ahead from (selectors.session_lengths).
    model = models.CharField(max_length=200, blank=True)
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
    # The room's main branch when the session's worktree was made: room_status reports
    # what merged into main since (agents/tools/room.py).
    base_commit = models.CharField(max_length=64, blank=True)
    # Last committed step; the loop resumes after it.
    step = models.PositiveIntegerField(default=0)
    tokens_input = models.PositiveBigIntegerField(default=0)
    tokens_cached = models.PositiveBigIntegerField(default=0)
    tokens_output = models.PositiveBigIntegerField(default=0)
    # The context gateway's state as one blob, as saved before StateRecord rows
    # (observations/state_store.py); read until the session's next unit, then emptied.
    gateway_state = models.JSONField(default=dict, blank=True)
    # The session's decisions as the gateway keeps them (Decisions.to_json), written by
    # the unit that changed them: the session page and every status refresh show them,
    # and they are a few lines where the gateway's whole state is megabytes.
    decisions = models.JSONField(default=list, blank=True)
    # The step loop's own state (agents/runtime/state.py): phase, pending calls, waits.
    runtime_state = models.JSONField(default=dict, blank=True)
    # A waiting or awaiting_approval session is looked at again at this time by beat.
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # A person waits for this session since (a steer, a mention, a decision) and no
    # worker holds it: the next free worker takes it before the rest of the queue, and
    # running slices yield at their next boundary (agents/runtime/dispatch.py). Cleared
    # when a worker claims it.
    attention_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # A person asked for a new segment (the session page's button); the next boundary
    # starts one and clears this.
    segment_requested_by = models.CharField(max_length=150, blank=True)
    # What the session's last room_status call reported (agents/tools/room.py): the next
    # call sends only what changed since, also after a resume on another worker.
    room_status_notes = models.JSONField(default=dict, blank=True)
    # When its worker last sent the model a request (the page says how long it waits).
    model_waiting_since = models.DateTimeField(null=True, blank=True)
    last_event_seq = models.PositiveBigIntegerField(default=0)
    # The trace analysis (agents/analysis/trace.py) as of event `analysis_seq`; recomputed
    # when the log has grown since, so room and agent totals add stored figures.
    analysis = models.JSONField(default=dict, blank=True)
    analysis_seq = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = SessionQuerySet.as_manager()
    # The gateway's old whole-state column, the step loop's state and room_status's notes.
    STATE_FIELDS = ("gateway_state", "runtime_state", "room_status_notes")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "agent", "attempt"], name="one_attempt_number")
        ]
        indexes = [
            models.Index(fields=["agent", "model", "state"], name="session_lengths"),
            # Beat's sweep and the dispatcher look at the live sessions every few seconds;
            # the finished ones, nearly all rows, stay out of this index.
            models.Index(fields=["state"], name="session_live",
                         condition=~models.Q(state__in=sorted(states.TERMINAL | {states.NEEDS_MERGE}))),
            # Beat's worktree pass over ended sessions that still have a worktree (agents.retention).
            models.Index(fields=["finished_at"], name="session_worktree_kept",
                         condition=models.Q(state__in=sorted(states.TERMINAL)) & ~models.Q(worktree_path="")),
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
        # The room page and its reloads ask every session whether an event of one kind
        # exists (loop.suspected): without it, each lookup reads the session's whole log.
        indexes = [models.Index(fields=["session", "kind"], name="sessionevent_kind")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"


class AgentMention(models.Model):
    """An agent's room post that names another agent, for one of that agent's live
    sessions in the room: delivered at the session's next step boundary, marked as an
    agent's words, unless the mention guard (agents/runtime/mentions.py) stopped it."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        STOPPED = "stopped"

    message = models.ForeignKey("rooms.Message", on_delete=models.CASCADE, related_name="+")
    sender = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="+")
    sender_session = models.ForeignKey("Session", null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    session = models.ForeignKey("Session", on_delete=models.CASCADE, related_name="agent_mentions")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    reason = models.TextField(blank=True, help_text="Why the guard stopped it.")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "id"]
        constraints = [models.UniqueConstraint(fields=["message", "session"], name="one_mention_per_session")]
        # The guard counts a pair's recent mentions at every agent post that names an agent.
        indexes = [models.Index(fields=["sender", "created_at"], name="agent_mention_pairs")]

    def __str__(self) -> str:
        return f"{self.sender} -> session {self.session_id} ({self.state})"


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
    reason = models.TextField(blank=True, help_text="Why it was denied, in the person's words.")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["session", "call_id"], name="one_approval_per_call")]
        # Beat expires pending approvals past their time every few seconds.
        indexes = [models.Index(fields=["state", "expires_at"], name="approval_expiry")]

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


class Review(models.Model):
    """One review round of a session's finished work (agents/runtime/reviews.py): the
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
        ordering = ["session", "round"]
        constraints = [models.UniqueConstraint(fields=["session", "round"], name="one_review_per_round")]

    def __str__(self) -> str:
        return f"review {self.round} of session {self.session_id} ({self.state})"


# The eval ledger (agents/evals/); imported here so the app registers them.
from agents.evals.models import EvalBatch, EvalRun, EvalVerdict  # noqa: E402,F401


class GatewayKey(models.Model):
    """A key that lets an agent running elsewhere call the gateway endpoint
    (agents/endpoint/) as one of the room's agents.

    Only the SHA-256 of the token is stored: the token is shown once, when it is made.
    The agent profile decides the upstream model and its key; the room bounds what the
    key reaches. A revoked key stays, so the room can see who made and revoked it.
    """

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="gateway_keys")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="gateway_keys")
    name = models.CharField(max_length=80)
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the token
    prefix = models.CharField(max_length=16)  # the token's start, to tell keys apart
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) in {self.room}"


class GatewayConversation(models.Model):
    """A stateless client's conversation through the gateway endpoint, and the session it
    drives (agents/endpoint/conversation.py names it). ``digests`` are the client's
    messages as its last answered request held them: what the next request is compared
    with. Its row lock serialises two requests of one conversation."""

    key = models.ForeignKey(GatewayKey, on_delete=models.CASCADE, related_name="conversations")
    conversation = models.CharField(max_length=200)
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="gateway_conversation")
    digests = models.JSONField(default=list, blank=True)
    # The digest of the last answer given: a diverged history that holds it is this
    # conversation changed by its client; one that does not is another run (a fork).
    last_answer = models.CharField(max_length=64, blank=True)
    requests = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "conversation"], name="one_gateway_conversation")]

    def __str__(self) -> str:
        return f"{self.conversation[:24]} → session {self.session_id}"


class GatewayAnswer(models.Model):
    """An answer the gateway gave in a conversation, by the digest of the assistant
    message a client sends back with its history: the next request that holds it
    continues that conversation (agents/endpoint/conversation.py ``route``)."""

    key = models.ForeignKey(GatewayKey, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(GatewayConversation, on_delete=models.CASCADE, related_name="answers")
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["key", "digest"], name="gateway_answer_digest")]

    def __str__(self) -> str:
        return f"{self.digest[:12]} → {self.conversation_id}"
