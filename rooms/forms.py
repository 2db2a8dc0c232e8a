from __future__ import annotations

import tempfile
from pathlib import Path

from django import forms
from django.conf import settings

from rooms.errors import RoomError
from rooms.models import Membership, RoomUpstream
from rooms.repository.prepare import (
    BundleRepository,
    NewRepository,
    RepositorySource,
    UpstreamRepository,
    check_bundle,
    check_clone_source,
    clone_roots_text,
)
from rooms.repository.ssh import new_deploy_key, scan_host_keys, ssh_address
from rooms.repository.upstream import Upstream, check_branch_name, check_upstream_url


class RoomCreateForm(forms.Form):
    """Django's CharField already refuses NUL characters, and form posts cannot carry
    lone surrogates (invalid UTF-8 is decoded to U+FFFD); room_create checks both again
    for callers that bypass the form.

    An uploaded bundle is kept in a file of the hub's until the room is made: the view
    calls ``discard_upload`` when it is done, whatever happened.
    """

    NEW, BUNDLE, CLONE, UPSTREAM = "new", "bundle", "clone", "upstream"

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
    upstream_url = forms.CharField(
        label="Upstream repository URL", max_length=500, required=False,
        help_text="Where the team's code lives, e.g. `https://github.com/org/repo.git` (with a token) or "
                  "`git@github.com:org/repo.git` (the room gets a deploy key of its own to add to the repository); "
                  "fetched before each session starts.")
    upstream_branch = forms.CharField(label="Upstream branch", max_length=100, required=False, initial="main")
    upstream_token = forms.CharField(
        label="Upstream token", max_length=300, required=False, widget=forms.PasswordInput(render_value=False),
        help_text="A token that may read and push the repository (and open pull requests when proposing; over "
                  "SSH, only for that). Kept by the hub alone: no page shows it again, no agent sees it.")
    upstream_after_work = forms.ChoiceField(label="After a session's work", required=False,
                                            choices=RoomUpstream.AfterWork.choices,
                                            initial=RoomUpstream.AfterWork.PUSH_MAIN)
    upstream_forge = forms.ChoiceField(label="Forge (for pull requests)", required=False,
                                       choices=RoomUpstream.ForgeKind.choices)
    upstream_api_url = forms.CharField(label="Forge API URL", max_length=300, required=False,
                                       help_text="Only for a self-hosted forge; empty: the forge's own.")
    check_command = forms.CharField(
        max_length=500,
        required=False,
        help_text="Run in the sandbox when an agent says it is done, e.g. `python -m pytest -q`.",
    )

    UPSTREAM_FIELDS = ("upstream_url", "upstream_branch", "upstream_token", "upstream_after_work", "upstream_forge",
                       "upstream_api_url")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices = [(self.NEW, "A new empty repository"), (self.BUNDLE, "An uploaded git bundle")]
        if settings.ATRIUM_CLONE_ROOTS:
            choices.append((self.CLONE, "A copy of a local repository"))
            self.fields["clone_path"].help_text = (
                f"An absolute path on the hub's machine, inside {clone_roots_text()}.")
        else:
            del self.fields["clone_path"]
        if settings.ATRIUM_UPSTREAM_HOSTS:
            choices.append((self.UPSTREAM, "A repository on a forge, linked as the room's upstream"))
        else:
            for name in self.UPSTREAM_FIELDS:
                del self.fields[name]
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
        elif source == self.UPSTREAM:
            cleaned["repository"] = self._upstream(cleaned)
        return cleaned

    def _upstream(self, cleaned: dict) -> NewRepository | UpstreamRepository:
        try:
            url = check_upstream_url(cleaned.get("upstream_url") or "", settings.ATRIUM_UPSTREAM_HOSTS)
        except ValueError as exc:
            self.add_error("upstream_url", str(exc))
            return NewRepository()
        branch = (cleaned.get("upstream_branch") or "main").strip()
        if not check_branch_name(branch):
            self.add_error("upstream_branch", "That is not a branch name git takes.")
            return NewRepository()
        token = cleaned.get("upstream_token") or ""
        if not all(" " < character < "\x7f" for character in token):
            self.add_error("upstream_token", "A token is printable ASCII, without spaces.")
            return NewRepository()
        after_work, forge = cleaned.get("upstream_after_work") or RoomUpstream.AfterWork.PUSH_MAIN, \
            cleaned.get("upstream_forge") or ""
        if after_work == RoomUpstream.AfterWork.PROPOSE and not forge:
            self.add_error("upstream_forge", "Proposing opens a pull request: name the forge.")
            return NewRepository()
        api_url = (cleaned.get("upstream_api_url") or "").strip()
        if api_url:
            try:
                check_upstream_url(api_url, settings.ATRIUM_UPSTREAM_HOSTS)
            except ValueError as exc:
                self.add_error("upstream_api_url", str(exc))
                return NewRepository()
        deploy_key = known_hosts = ""
        if (address := ssh_address(url)) is not None:
            try:
                known_hosts = scan_host_keys(address)
            except ValueError as exc:
                self.add_error("upstream_url", str(exc))
                return NewRepository()
            deploy_key = new_deploy_key()
        return UpstreamRepository(upstream=Upstream(url=url, branch=branch, token=token,
                                                    max_bytes=settings.ATRIUM_UPLOAD_MAX_BYTES,
                                                    deploy_key=deploy_key, known_hosts=known_hosts),
                                  after_work=after_work, forge=forge, api_url=api_url)

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
