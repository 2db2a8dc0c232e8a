"""The room's code at any branch, tag or commit (``rooms.repository.browse``): its refs,
a folder, a file highlighted, the ref's commits. Read-only, for anyone in the room;
the ref and path come in the query (``?ref=atrium/session-3&path=src/app.py``), so a
branch name's slashes never meet the path's."""

from __future__ import annotations

from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from rooms.diff_view import highlighted_file
from rooms.repository.browse import commits, entries, file_bytes, kind_of, refs, resolve
from rooms.repository.git import GitError
from rooms.selectors import access_room

FILE_SHOWN_MAX_BYTES = 512 * 1024


@require_GET
def room_code(request: HttpRequest, slug: str) -> HttpResponse:
    room = access_room(request.user, slug).room
    repo = Path(room.repo_path)
    asked_ref = request.GET.get("ref") or room.default_branch
    path = request.GET.get("path", "").strip("/")
    if "\x00" in asked_ref or "\x00" in path or ".." in path.split("/"):
        raise Http404("No such path.")
    try:
        known = refs(repo)
        commit = resolve(repo, asked_ref, known)
        kind = kind_of(repo, commit, path) if commit else None
        if kind is None:
            raise Http404("No such branch, tag, commit or path.")
        context = {"room": room, "refs": known, "ref": asked_ref, "commit": commit, "path": path, "kind": kind,
                   "crumbs": _crumbs(path), "commits": commits(repo, commit)}
        if kind == "tree":
            context["entries"] = entries(repo, commit, path)
        elif kind in ("blob", "link"):
            size, data = file_bytes(repo, commit, path, max_bytes=FILE_SHOWN_MAX_BYTES)
            context["size"] = size
            if data is not None and b"\x00" not in data[:8000]:
                context["code"] = highlighted_file(path, data.decode("utf-8", "replace"))
            context["binary"] = data is not None and "code" not in context
    except GitError:
        return render(request, "rooms/code.html", {"room": room, "error": "git could not read this."}, status=503)
    return render(request, "rooms/code.html", context)


def _crumbs(path: str) -> list[tuple[str, str]]:
    parts = path.split("/") if path else []
    return [(part, "/".join(parts[: n + 1])) for n, part in enumerate(parts)]
