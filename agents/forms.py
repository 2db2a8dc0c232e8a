from __future__ import annotations

from django import forms

from agents.models import AgentProfile


class AgentProfileForm(forms.ModelForm):
    """The web form for a profile. Model spec and budget rules live on the model,
    so the admin and this form refuse the same things."""

    class Meta:
        model = AgentProfile
        fields = [
            "name",
            "role_prompt",
            "model",
            "fallback_models",
            "context_window",
            "output_budget",
            "eviction_policy",
            "base_url",
        ]
        widgets = {
            "role_prompt": forms.Textarea(attrs={"rows": 6}),
            "model": forms.TextInput(attrs={"placeholder": "anthropic:claude-sonnet-4-5"}),
        }
        labels = {"base_url": "Base URL (optional, for OpenAI-compatible servers)"}
