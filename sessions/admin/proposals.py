from __future__ import annotations

from django.contrib import admin

from sessions.models import SessionProposal


@admin.register(SessionProposal)
class SessionProposalAdmin(admin.ModelAdmin):
    list_display = ["session", "number", "state", "url", "checked_at"]
    list_filter = ["state"]
    search_fields = ["url", "session__task__title"]
    readonly_fields = ["session", "number", "url", "state", "checked_at", "created_at"]
