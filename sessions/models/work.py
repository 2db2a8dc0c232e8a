"""Tasks and the sessions that attempt them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import AgentProfile

# The eval ledger (evals/); imported here so the app registers them.
from sessions.runtime import states


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
        db_table = "agents_task"
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

    # The state machine (names and allowed transitions) lives in sessions.runtime.states.
    State = models.TextChoices("State", [(name.upper(), name) for name in states.TRANSITIONS])

    class Origin(models.TextChoices):
        HUB = "hub"  # run by the hub's workers
        # An agent that runs elsewhere, through the gateway endpoint (endpoint/):
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
    # (sessions/ledger/state_store.py); read until the session's next unit, then emptied.
    gateway_state = models.JSONField(default=dict, blank=True)
    # The session's decisions as the gateway keeps them (Decisions.to_json), written by
    # the unit that changed them: the session page and every status refresh show them,
    # and they are a few lines where the gateway's whole state is megabytes.
    decisions = models.JSONField(default=list, blank=True)
    # The step loop's own state (sessions/runtime/loop_state.py): phase, pending calls, waits.
    runtime_state = models.JSONField(default=dict, blank=True)
    # A waiting or awaiting_approval session is looked at again at this time by beat.
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # A person waits for this session since (a steer, a mention, a decision) and no
    # worker holds it: the next free worker takes it before the rest of the queue, and
    # running slices yield at their next boundary (sessions/runtime/dispatch.py). Cleared
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
    # The trace analysis (sessions/analysis/trace.py) as of event `analysis_seq`; recomputed
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
        db_table = "agents_session"
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
            # Beat's worktree pass over ended sessions that still have a worktree (sessions.retention).
            models.Index(fields=["finished_at"], name="session_worktree_kept",
                         condition=models.Q(state__in=sorted(states.TERMINAL)) & ~models.Q(worktree_path="")),
        ]

    def __str__(self) -> str:
        return f"{self.agent} on {self.task} (attempt {self.attempt})"
