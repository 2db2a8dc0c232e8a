"""A session's ledger records in the admin, read-only: the gateway writes them."""

from __future__ import annotations

from django.contrib import admin

from sessions.models import (
    Fold,
    HistoryEntry,
    LedgerEntry,
    Observation,
    Payload,
    Segment,
    StateRecord,
)


class _RecordAdmin(admin.ModelAdmin):
    """Records the gateway writes (its observations' states, the read ledger, folds
    mirror the session's gateway state): read in the admin, never edited there."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a session's state and ledger would no longer add up


@admin.register(Observation)
class ObservationAdmin(_RecordAdmin):
    list_display = ("session", "seq", "step", "tool", "purpose", "path", "line_start", "line_end",
                    "token_estimate", "state", "served", "fold_number")
    list_filter = ("state", "served", "tool", "room")
    search_fields = ("call_id", "path", "purpose", "blob__sha256")
    raw_id_fields = ("room", "session", "blob")
    list_select_related = ("session",)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(_RecordAdmin):
    list_display = ("session", "path", "line_start", "line_end", "observation_seq", "received_step",
                    "in_context", "evicted_by_fold", "times_served", "changed_step")
    list_filter = ("in_context",)
    search_fields = ("path", "content_hash")
    raw_id_fields = ("session",)


@admin.register(Fold)
class FoldAdmin(_RecordAdmin):
    list_display = ("session", "number", "step", "epoch", "reason", "postponements",
                    "projection_before", "projection_after", "tokens_freed")
    list_filter = ("reason",)
    raw_id_fields = ("session",)


@admin.register(Segment)
class SegmentAdmin(_RecordAdmin):
    list_display = ("session", "number", "started_step", "reason", "prose_source", "handoff_bytes",
                    "first_request_tokens", "archived")
    list_filter = ("prose_source",)
    raw_id_fields = ("session",)


@admin.register(Payload)
class PayloadAdmin(_RecordAdmin):
    list_display = ("session", "pid", "segment", "step", "what", "path", "size", "state", "fold_number")
    list_filter = ("state",)
    search_fields = ("path", "blob__sha256")
    raw_id_fields = ("room", "session", "blob")


@admin.register(HistoryEntry)
class HistoryEntryAdmin(_RecordAdmin):
    list_display = ("session", "segment", "position", "step", "kind", "label", "ref")
    list_filter = ("kind",)
    search_fields = ("label", "ref")
    raw_id_fields = ("session",)


@admin.register(StateRecord)
class StateRecordAdmin(_RecordAdmin):
    list_display = ("session", "seq", "snapshot", "size")
    list_filter = ("snapshot",)
    raw_id_fields = ("session",)
    exclude = ("data",)  # a snapshot can be megabytes; export_session reads it whole
