"""Proposals on a forge: a session's branch, pushed to the room's upstream, opened as a
GitHub pull request or a GitLab merge request through the forge's REST API (httpx2),
and its state read back. Only the fields the hub uses are sent and read; the token
goes in the forge's own header, and what a forge answers is read as data, never shown
raw (a refusal is summarised, its body cut short, the token scrubbed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

from rooms.repository.ssh import ssh_address

TIMEOUT_SECONDS = 30
FORGES = ("github", "gitlab")


class ForgeError(RuntimeError):
    """The forge refused or could not be reached; the message says which (``status``:
    the forge's HTTP status, 0 when it did not answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Forge:
    kind: str  # "github" or "gitlab"
    api_url: str  # https://api.github.com, https://gitlab.example.com/api/v4, ...
    project: str  # owner/name (GitHub) or the project's path (GitLab)
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Proposal:
    number: int
    url: str
    state: str  # "open", "merged" or "closed"


def forge_for(kind: str, repository_url: str, token: str, api_url: str = "") -> Forge:
    """The forge of an upstream URL: its project from the URL's path, its API where that
    forge keeps it unless ``api_url`` says otherwise (an enterprise install)."""
    if kind not in FORGES:
        raise ValueError(f"Proposals are opened on {' or '.join(FORGES)}.")
    if address := ssh_address(repository_url):  # the forge's web side is HTTPS on the same host
        host, origin, path = address.host, f"https://{address.host}", address.path
    else:
        parts = urlsplit(repository_url)
        host, origin, path = parts.hostname, f"{parts.scheme}://{parts.netloc}", parts.path
    project = path.strip("/").removesuffix(".git")
    if not api_url:
        api_url = "https://api.github.com" if kind == "github" and host == "github.com" else \
            origin + ("/api/v3" if kind == "github" else "/api/v4")
    return Forge(kind=kind, api_url=api_url.rstrip("/"), project=project, token=token)


def open_proposal(forge: Forge, *, head: str, base: str, title: str, body: str) -> Proposal:
    """A new pull (merge) request of ``head`` into ``base``, or the open one the forge
    already has for ``head`` (a session run again after its push)."""
    try:
        if forge.kind == "github":
            return _github(_call(forge, "POST", f"/repos/{forge.project}/pulls",
                                 {"title": title, "head": head, "base": base, "body": body}))
        return _gitlab(_call(forge, "POST", f"/projects/{_project(forge)}/merge_requests",
                             {"source_branch": head, "target_branch": base, "title": title, "description": body}))
    except ForgeError as exc:
        if exc.status not in (409, 422) or (found := _open_for(forge, head)) is None:
            raise
        return found


def _open_for(forge: Forge, head: str) -> Proposal | None:
    if forge.kind == "github":
        owner = forge.project.split("/", 1)[0]
        listed = _call(forge, "GET", f"/repos/{forge.project}/pulls?state=open&head={quote(owner)}:{quote(head)}")
        return _github(listed[0]) if listed else None
    listed = _call(forge, "GET", f"/projects/{_project(forge)}/merge_requests?state=opened&source_branch={quote(head)}")
    return _gitlab(listed[0]) if listed else None


def _project(forge: Forge) -> str:
    return quote(forge.project, safe="")


def proposal_state(forge: Forge, number: int) -> Proposal:
    if forge.kind == "github":
        return _github(_call(forge, "GET", f"/repos/{forge.project}/pulls/{number}"))
    return _gitlab(_call(forge, "GET", f"/projects/{_project(forge)}/merge_requests/{number}"))


def _github(answer: Any) -> Proposal:
    if not isinstance(answer, dict):
        raise ForgeError("The forge's answer was not an object.")
    state = "merged" if answer.get("merged_at") or answer.get("merged") else str(answer.get("state", ""))
    return Proposal(number=_number(answer.get("number")), url=_url(answer.get("html_url")),
                    state=state if state in ("open", "merged", "closed") else "open")


def _gitlab(answer: Any) -> Proposal:
    if not isinstance(answer, dict):
        raise ForgeError("The forge's answer was not an object.")
    state = {"opened": "open", "merged": "merged", "closed": "closed", "locked": "closed"}.get(
        str(answer.get("state", "")), "open")
    return Proposal(number=_number(answer.get("iid")), url=_url(answer.get("web_url")), state=state)


def _number(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ForgeError("The forge's answer named no proposal number.")
    return value


def _url(value: object) -> str:
    if not isinstance(value, str) or urlsplit(value).scheme not in ("https", "http") or len(value) > 500:
        raise ForgeError("The forge's answer named no link to the proposal.")
    return value


def _call(forge: Forge, method: str, path: str, payload: dict | None = None) -> Any:
    """The forge's JSON answer (an object, or a list for a search); ForgeError for
    anything else, whatever went wrong on the way (a URL or token no request can carry
    included: a forge's trouble never becomes the hub's)."""
    headers = {"Accept": "application/json", "User-Agent": "Atrium"}
    if forge.kind == "github":
        headers |= {"Authorization": f"Bearer {forge.token}", "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": "2022-11-28"}
    else:
        headers["PRIVATE-TOKEN"] = forge.token
    try:
        with httpx2.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
            response = client.request(method, forge.api_url + path, headers=headers, json=payload)
    except Exception as exc:  # noqa: BLE001 - unreachable, a bad URL, a header no request can carry
        raise ForgeError(f"The forge could not be reached: {type(exc).__name__}.") from None
    if response.status_code >= 300:
        said = response.text.replace(forge.token, "[token]") if forge.token else response.text
        raise ForgeError(f"The forge refused ({response.status_code}): {said[:300]}", response.status_code)
    try:
        answer = response.json()
    except ValueError:
        raise ForgeError("The forge answered with something other than JSON.") from None
    if not isinstance(answer, dict | list):
        raise ForgeError("The forge's answer was not an object.")
    return answer
