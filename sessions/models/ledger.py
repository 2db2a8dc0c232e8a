"""A session's observation ledger: its tool results (blobs in the shared store), what the
model received, folds, segments, payloads, searchable history and the gateway's state."""

from __future__ import annotations

from django.db import models

from observations.models import Blob

# The eval ledger (evals/); imported here so the app registers them.


class Observation(models.Model):
    class State(models.TextChoices):
        FRESH = "fresh"
        CONSUMED = "consumed"
        RECEIPTED = "receipted"
        ARCHIVED = "archived", "archived (its segment ended)"

    class Served(models.TextChoices):
        TEXT = "text", "full text"
        NOTE = "note", "note (same range still in context)"
        REREAD = "reread", "full text again (re-read after a fold)"

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="observations")
    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="observations")
    seq = models.PositiveIntegerField(help_text="Position among the session's observations, from 0.")
    step = models.PositiveIntegerField()
    segment = models.PositiveIntegerField(default=1)
    call_id = models.CharField(max_length=100)
    tool = models.CharField(max_length=60)
    arguments = models.JSONField(default=dict)
    args_key = models.CharField(max_length=64, help_text="sha256 of the normalized arguments.")
    purpose = models.CharField(max_length=300, blank=True)
    path = models.CharField(max_length=500, blank=True)
    line_start = models.PositiveIntegerField(null=True, blank=True)
    line_end = models.PositiveIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    file_fingerprint = models.CharField(max_length=64, blank=True)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="observations")
    size = models.PositiveBigIntegerField()
    token_estimate = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.FRESH)
    served = models.CharField(max_length=10, choices=Served.choices, default=Served.TEXT)
    fold_number = models.PositiveIntegerField(null=True, blank=True)
    alias_of_seq = models.PositiveIntegerField(null=True, blank=True)
    reread_of_seq = models.PositiveIntegerField(null=True, blank=True)
    # Once folded out: the receipt the model saw in its place, as it was sent.
    receipt_text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "observations_observation"
        ordering = ["session", "seq"]
        # Not one per call id: a gateway client's history fed again into a new segment
        # holds its calls again, and some model servers repeat their ids.
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="one_observation_per_seq"),
        ]
        indexes = [
            models.Index(fields=["room", "tool", "args_key", "file_fingerprint"], name="room_cache"),
            # The room page's shared-store figures (selectors.room_store_savings): PostgreSQL
            # groups a room's rows by blob and session from this index alone.
            models.Index(fields=["room", "blob", "session", "id", "size"], name="room_store"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq} {self.tool}"


class LedgerEntry(models.Model):
    """Per session: a file range the model received, and whether it is still in context."""

    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="ledger_entries")
    range_key = models.CharField(max_length=64, help_text="sha256 of path, lines and content hash.")
    path = models.CharField(max_length=500)
    line_start = models.PositiveIntegerField(null=True, blank=True)
    line_end = models.PositiveIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    observation_seq = models.PositiveIntegerField()
    received_step = models.PositiveIntegerField()
    in_context = models.BooleanField(default=True)
    evicted_by_fold = models.PositiveIntegerField(null=True, blank=True)
    times_served = models.PositiveIntegerField(default=1)
    changed_step = models.PositiveIntegerField(
        null=True, blank=True, help_text="A write changed the file at this step, after the range was received.")

    class Meta:
        db_table = "observations_ledgerentry"
        ordering = ["session", "path", "line_start"]
        verbose_name_plural = "ledger entries"
        constraints = [models.UniqueConstraint(fields=["session", "range_key"], name="one_ledger_entry_per_range")]

    def __str__(self) -> str:
        return f"{self.path}:{self.line_start}-{self.line_end}"


class Fold(models.Model):
    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="folds")
    number = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    epoch = models.PositiveIntegerField()
    reason = models.CharField(max_length=20)
    postponements = models.PositiveIntegerField(default=0)
    projection_before = models.PositiveIntegerField()
    projection_after = models.PositiveIntegerField()
    tokens_freed = models.IntegerField()
    evicted = models.JSONField(default=list, help_text="Observation seqs folded out.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "observations_fold"
        ordering = ["session", "number"]
        constraints = [models.UniqueConstraint(fields=["session", "number"], name="one_fold_per_number")]

    def __str__(self) -> str:
        return f"fold {self.number} of session {self.session_id}"


class Segment(models.Model):
    """A stretch of one session's conversation; a new one opens with a handoff."""

    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="segments")
    number = models.PositiveIntegerField(help_text="The segment this handoff opened (2 is the first reset).")
    started_step = models.PositiveIntegerField()
    reason = models.TextField()
    prose_source = models.CharField(max_length=20, help_text="model, records or stand-in")
    handoff = models.TextField()
    handoff_sizes = models.JSONField(default=dict, help_text="Bytes per section.")
    handoff_bytes = models.PositiveIntegerField()
    handoff_tokens = models.PositiveIntegerField()
    first_request_tokens = models.PositiveIntegerField(default=0)
    archived = models.PositiveIntegerField(default=0, help_text="Observations that left with the old segment.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "observations_segment"
        ordering = ["session", "number"]
        constraints = [models.UniqueConstraint(fields=["session", "number"], name="one_segment_per_number")]

    def __str__(self) -> str:
        return f"segment {self.number} of session {self.session_id}"


class Payload(models.Model):
    """A body the agent wrote inside a tool call (a file's content, a heredoc), stored so
    that the receipt standing in for it is true: `recall` returns these bytes."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="payloads")
    pid = models.PositiveIntegerField()
    segment = models.PositiveIntegerField(default=1)
    step = models.PositiveIntegerField()
    what = models.CharField(max_length=60)
    path = models.CharField(max_length=500, blank=True)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="payloads")
    size = models.PositiveBigIntegerField()
    state = models.CharField(max_length=10, choices=Observation.State.choices, default=Observation.State.FRESH)
    fold_number = models.PositiveIntegerField(null=True, blank=True)
    receipt_text = models.TextField(blank=True)

    class Meta:
        db_table = "observations_payload"
        ordering = ["session", "pid"]
        constraints = [models.UniqueConstraint(fields=["session", "pid"], name="one_payload_per_pid")]

    def __str__(self) -> str:
        return f"{self.session_id}:p{self.pid} {self.what} {self.path}"


class HistoryEntry(models.Model):
    """One message, call or result of a session's ended segment, for history_search.

    Searched with the database's own full-text search: PostgreSQL's tsvector (a GIN
    index on the expression), SQLite's FTS5 (a virtual table kept beside this one).
    """

    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="history")
    segment = models.PositiveIntegerField()
    position = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    label = models.CharField(max_length=300)
    ref = models.CharField(max_length=12, blank=True)
    call_id = models.CharField(max_length=100, blank=True)
    tool = models.CharField(max_length=60, blank=True)
    text = models.TextField()
    # What search looks at: the text, or a long one's head and tail (PostgreSQL's
    # tsvector holds at most 1 MB; a build log can be larger).
    search_text = models.TextField()

    class Meta:
        db_table = "observations_historyentry"
        ordering = ["session", "segment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "segment", "position"], name="one_history_entry_per_position")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} segment {self.segment} #{self.position} {self.kind}"


class StateRecord(models.Model):
    """One unit's save of a session's gateway state (observations/gateway/journal.py): a
    snapshot, or a delta against the record before it. The state is the newest snapshot
    with the deltas after it; a snapshot deletes the records before it in its transaction.
    Before these, the whole state was rewritten into Session.gateway_state every unit;
    such a session is read from that column until its next save writes a snapshot."""

    session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE, related_name="state_records")
    seq = models.PositiveBigIntegerField()
    snapshot = models.BooleanField()
    # Compact JSON text: written as the journal encoded it, not parsed again by the database.
    data = models.TextField()
    size = models.PositiveIntegerField(help_text="Bytes of data.")

    class Meta:
        db_table = "observations_staterecord"
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_state_record_per_seq")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {'snapshot' if self.snapshot else 'delta'} ({self.size} bytes)"
