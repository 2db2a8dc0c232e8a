from __future__ import annotations

import tempfile
from pathlib import Path

from django import forms
from django.conf import settings

from rooms.errors import RoomError
from rooms.models import Membership
from rooms.repository.prepare import (
    BundleRepository,
    NewRepository,
    RepositorySource,
    check_bundle,
    check_clone_source,
    clone_roots_text,
)


class RoomCreateForm(forms.Form):
    """Django's CharField already refuses NUL characters, and form posts cannot carry
    lone surrogates (invalid UTF-8 is decoded to U+FFFD); room_create checks both again
    for callers that bypass the form.

    An uploaded bundle is kept in a file of the hub's until the room is made: the view
    calls ``discard_upload`` when it is done, whatever happened.
    """

    NEW, BUNDLE, CLONE = "new", "bundle", "clone"

    name = forms.CharField(max_length=120)
    source = forms.ChoiceField(label="Repository", initial=NEW, widget=forms.RadioSelect)
    bundle = forms.FileField(
        label="Git bundle to start from", required=False,
        help_text="Made with `git bundle create repo.bundle --all` in your repository.",
    )
    clone_path = forms.CharField(
        label="Path of the repository to copy",
        required=False,
    )
    check_command = forms.CharField(
        max_length=500,
        required=False,
        help_text="Run in the sandbox when an agent says it is done, e.g. `python -m pytest -q`.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices = [(self.NEW, "A new empty repository"), (self.BUNDLE, "An uploaded git bundle")]
        if settings.ATRIUM_CLONE_ROOTS:
            choices.append((self.CLONE, "A copy of a local repository"))
            self.fields["clone_path"].help_text = (
                f"An absolute path on the hub's machine, inside {clone_roots_text()}.")
        else:
            del self.fields["clone_path"]
        self.fields["source"].choices = choices
        self._upload: Path | None = None

    def clean(self) -> dict:
        cleaned = super().clean()
        cleaned["repository"] = NewRepository()
        source = cleaned.get("source")
        # A clone path the field already refused (e.g. a NUL character) is not checked again.
        if source == self.CLONE and "clone_path" not in self.errors:
            try:
                cleaned["repository"] = check_clone_source(cleaned.get("clone_path", ""))
            except RoomError as exc:
                self.add_error("clone_path", exc.message)
        elif source == self.BUNDLE:
            cleaned["repository"] = self._bundle(cleaned.get("bundle"))
        return cleaned

    def _bundle(self, upload) -> NewRepository | BundleRepository:
        if upload is None:
            self.add_error("bundle", "Choose the bundle file to upload.")
            return NewRepository()
        if upload.size > settings.ATRIUM_UPLOAD_MAX_BYTES:
            self.add_error("bundle", f"The bundle is {upload.size:,} bytes; the limit is "
                                     f"{settings.ATRIUM_UPLOAD_MAX_BYTES:,} bytes.")
            return NewRepository()
        uploads = settings.DATA_DIR / "uploads"
        uploads.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=uploads, suffix=".bundle", delete=False) as handle:
            self._upload = Path(handle.name)
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            return check_bundle(self._upload)
        except RoomError as exc:
            self.add_error("bundle", exc.message)
            return NewRepository()

    def discard_upload(self) -> None:
        if self._upload is not None:
            self._upload.unlink(missing_ok=True)

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
