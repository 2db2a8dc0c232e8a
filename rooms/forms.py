from __future__ import annotations

from django import forms

from agents.models import AgentProfile
from rooms.errors import RoomError
from rooms.models import Membership, Room
from rooms.repo import NewRepository, RepositorySource, check_clone_source
from rooms.selectors import assignable_agents


class RoomCreateForm(forms.Form):
    """Django's CharField already refuses NUL characters, and form posts cannot carry
    lone surrogates (invalid UTF-8 is decoded to U+FFFD); room_create checks both again
    for callers that bypass the form."""

    NEW, CLONE = "new", "clone"

    name = forms.CharField(max_length=120)
    source = forms.ChoiceField(
        label="Repository",
        choices=[(NEW, "A new empty repository"), (CLONE, "A copy of a local repository")],
        initial=NEW,
        widget=forms.RadioSelect,
    )
    clone_path = forms.CharField(
        label="Path of the repository to copy",
        required=False,
        help_text="An absolute path on the hub's machine, e.g. /home/me/projects/app.",
    )
    check_command = forms.CharField(
        max_length=500,
        required=False,
        help_text="Run in the repository when an agent says it is done, e.g. python -m pytest -q.",
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        cleaned["repository"] = NewRepository()
        # A clone path the field already refused (e.g. a NUL character) is not checked again.
        if cleaned.get("source") == self.CLONE and "clone_path" not in self.errors:
            try:
                cleaned["repository"] = check_clone_source(cleaned.get("clone_path", ""))
            except RoomError as exc:
                self.add_error("clone_path", exc.message)
        return cleaned

    @property
    def repository(self) -> RepositorySource:
        return self.cleaned_data["repository"]


class MemberAddForm(forms.Form):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"placeholder": "username", "aria-label": "Username"})
    )
    role = forms.ChoiceField(
        choices=[
            (Membership.Role.MEMBER, "member (posts, assigns agents)"),
            (Membership.Role.VIEWER, "viewer (reads only)"),
            (Membership.Role.OWNER, "owner (also manages people)"),
        ],
        initial=Membership.Role.MEMBER,
        widget=forms.Select(attrs={"aria-label": "Role"}),
    )


class AgentAssignForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=AgentProfile.objects.none(),
        empty_label=None,
        widget=forms.Select(attrs={"aria-label": "Agent to assign"}),
    )

    def __init__(self, *args, room: Room, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = assignable_agents(room)


class RoomSettingsForm(forms.Form):
    check_command = forms.CharField(
        max_length=500, required=False,
        help_text="Runs in the session's worktree, in the sandbox, when an agent says it is done, "
                  "e.g. python -m pytest -q.",
    )
    allow_network = forms.BooleanField(
        required=False, label="Commands may use the network",
        help_text="Off: agents' commands and the check run with no network at all.",
    )
