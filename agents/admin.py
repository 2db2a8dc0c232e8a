from __future__ import annotations

from django import forms
from django.contrib import admin

from agents.models import (
    AgentProfile,
    Approval,
    ApprovalRule,
    ProviderCall,
    RoomAgent,
    Session,
    SessionEvent,
    Task,
)


class AgentProfileAdminForm(forms.ModelForm):
    class Meta:
        model = AgentProfile
        fields = [
            "name", "role_prompt", "model", "fallback_models", "context_window", "output_budget",
            "eviction_policy", "allowed_tools", "base_url", "api_key", "created_by",
        ]
        # Not echoed back into the page once saved; leave blank to keep the stored key.
        widgets = {"api_key": forms.PasswordInput(render_value=False)}

    def clean_api_key(self) -> str:
        return self.cleaned_data["api_key"] or (self.instance.api_key if self.instance.pk else "")


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    form = AgentProfileAdminForm
    list_display = ["name", "model", "context_window", "output_budget", "eviction_policy", "created_by", "created_at"]
    list_filter = ["eviction_policy", "created_at"]
    search_fields = ["name", "model", "role_prompt"]


@admin.register(RoomAgent)
class RoomAgentAdmin(admin.ModelAdmin):
    list_display = ["agent", "room", "added_by", "created_at"]
    list_filter = ["agent", "room"]
    search_fields = ["agent__name", "room__name", "room__slug"]
    autocomplete_fields = ["room", "agent"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["title", "room", "created_by", "created_at"]
    list_filter = ["room", "created_at"]
    search_fields = ["title", "objective", "constraints", "room__name"]
    list_select_related = ["room", "created_by"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "id", "task", "agent", "attempt", "state", "step",
        "tokens_input", "tokens_cached", "tokens_output", "lease_owner", "created_at",
    ]
    list_filter = ["state", "agent", "created_at"]
    search_fields = ["task__title", "agent__name", "reason", "branch", "lease_owner"]
    list_select_related = ["task", "agent"]
    readonly_fields = ["created_at", "started_at", "finished_at"]


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ["session", "seq", "kind", "created_at"]
    list_filter = ["kind", "created_at"]
    search_fields = ["kind", "session__task__title", "session__agent__name"]
    list_select_related = ["session", "session__agent", "session__task"]
    readonly_fields = ["session", "seq", "kind", "payload", "created_at"]


@admin.register(ProviderCall)
class ProviderCallAdmin(admin.ModelAdmin):
    list_display = [
        "session", "step", "model", "input_tokens", "cached_input_tokens", "output_tokens",
        "projected_tokens", "latency_ms", "created_at",
    ]
    list_filter = ["model", "created_at"]
    search_fields = ["model", "prefix_hash", "error"]
    list_select_related = ["session", "session__agent", "session__task"]
    raw_id_fields = ["session"]


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(admin.ModelAdmin):
    list_display = ["room", "tool", "path_glob", "command_prefix", "decision", "created_by", "created_at"]
    list_filter = ["decision", "tool", "room"]
    search_fields = ["tool", "path_glob", "command_prefix", "room__name"]
    list_select_related = ["room", "created_by"]


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    list_display = ["session", "tool", "call_id", "state", "always", "decided_by", "created_at", "expires_at"]
    list_filter = ["state", "tool", "always"]
    search_fields = ["tool", "call_id", "session__task__title", "session__agent__name"]
    list_select_related = ["session", "decided_by"]
    raw_id_fields = ["session"]
