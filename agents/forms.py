"""The agent profile form."""

from __future__ import annotations

from django import forms
from django.conf import settings

from agents.models import AgentProfile
from agents.providers.replay import recordings
from observations.gateway.model_spec import model_kind


class AgentProfileForm(forms.ModelForm):
    """The one form for a profile, on the web and in the admin (which adds fields). Model
    spec and budget rules live on the model.

    The API key is write-only: never rendered back, and left blank it keeps the key the
    profile has, unless the endpoint changes (provider or base URL): a stored key never
    follows its profile to another endpoint.
    """

    new_api_key = forms.CharField(
        label="API key (optional)", required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored for this agent only and never shown again; blank keeps the current key. "
                  "Without one, the hub's key from the environment is used, but only for the "
                  "provider's official endpoint or the configured base URL.",
    )
    clear_api_key = forms.BooleanField(label="Remove the stored API key", required=False)

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
            "connect_timeout_seconds",
            "answer_timeout_seconds",
            "call_timeout_seconds",
            "price_input",
            "price_cached_input",
            "price_cache_write",
            "price_output",
        ]
        widgets = {
            "role_prompt": forms.Textarea(attrs={"rows": 6}),
            "model": forms.TextInput(attrs={"placeholder": "anthropic:claude-sonnet-4-5"}),
        }
        labels = {"base_url": "Base URL (optional, for OpenAI-compatible servers)"}
        help_texts = {
            "base_url": "An agent with its own base URL needs its own API key (a local server "
                        "needs none): the hub's key never goes to a URL set here.",
        }

    LIMITS = ("connect_timeout_seconds", "answer_timeout_seconds", "call_timeout_seconds")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name in self.LIMITS:  # left blank: as it is (a new profile: the default)
            self.fields[name].required = False
        if not (self.instance.pk and self.instance.api_key):
            self.fields["clear_api_key"].widget = forms.HiddenInput()  # nothing stored to remove (a new profile)
        # The hub's recorded agents, offered as the model (they need no key).
        self.recordings = recordings(settings.REPLAYS_DIR)
        if self.recordings:
            model = self.fields["model"]
            model.widget.attrs["list"] = "model-recordings"
            model.help_text += " Recorded agents on this hub, which need no key: " + ", ".join(
                f"`{spec}`" for spec in self.recordings) + "."

    def clean_new_api_key(self) -> str:
        key = self.cleaned_data.get("new_api_key") or ""
        if key.strip().startswith("atr-gw-"):
            # The agent would call this hub's gateway, which calls the agent's model, …
            raise forms.ValidationError("That is a gateway key of this hub; an agent's API key is its provider's key.")
        return key

    def clean(self):
        cleaned = super().clean()
        for name in self.LIMITS:
            if cleaned.get(name) is None and name not in self.errors:
                cleaned[name] = getattr(self.instance, name)
        stored = self.instance.pk and self.instance.api_key
        if stored and not cleaned.get("new_api_key") and not cleaned.get("clear_api_key"):
            old_provider = model_kind(self.instance.model)
            new_provider = model_kind(cleaned.get("model") or "")
            if "base_url" in self.changed_data or old_provider != new_provider:
                # A stored key must never follow its profile to another endpoint.
                self.add_error("new_api_key", "The stored key belongs to the old endpoint: enter the key "
                                              "for the new one, or remove the stored key.")
        # The model's own checks (AgentProfile.check_specs) judge the key this form saves.
        if cleaned.get("clear_api_key"):
            self.instance.api_key = ""
        elif cleaned.get("new_api_key"):
            self.instance.api_key = cleaned["new_api_key"]
        return cleaned

    def save(self, commit: bool = True) -> AgentProfile:
        profile = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            profile.api_key = ""
        elif key := self.cleaned_data.get("new_api_key"):
            profile.api_key = key
        if commit:
            profile.save()
            self.save_m2m()
        return profile
