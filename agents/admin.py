"""Agent profiles in the admin: changed through the same service (and checks) as the pages."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from agents.forms import AgentProfileForm
from agents.models import AgentProfile
from agents.services import agent_profile_save


class AgentProfileAdminForm(AgentProfileForm):
    """The web's form (write-only key, refused on an endpoint change) plus what only staff set."""

    class Meta(AgentProfileForm.Meta):
        fields = [*AgentProfileForm.Meta.fields, "allowed_tools", "record_requests", "created_by"]


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    form = AgentProfileAdminForm
    list_display = ["name", "model", "context_window", "output_budget", "eviction_policy", "created_by", "created_at"]
    list_filter = ["eviction_policy", "created_at"]
    search_fields = ["name", "model", "role_prompt"]

    def save_model(self, request: HttpRequest, obj: AgentProfile, form, change: bool) -> None:
        # The same service as the web: staff may manage every profile.
        agent_profile_save(profile=obj, actor=request.user)
