"""A session's change as a whole (its *Changes* page): the files its branch changed since
it left main, lines added and removed, each file's diff highlighted and collapsible,
binary and huge files named rather than shown, ``PAGE_FILES`` files a page. While the
session runs the page asks again every few seconds and is sent anew only when the
branch moved (204 otherwise). The whole change downloads as a patch."""

from __future__ import annotations

from pathlib import Path

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from rooms.diff_view import diff_lines, table_html
from rooms.repository.changes import SHOWN_MAX_LINES, change_patch, file_diffs, session_change
from rooms.repository.git import GitError
from sessions import selectors
from sessions.models import Session
from sessions.runtime import states

PAGE_FILES = 50
POLL_SECONDS = 5


@require_GET
def session_changes(request: HttpRequest, session_id: int) -> HttpResponse:
    session = selectors.access_session(request.user, session_id).session
    room = session.task.room
    repo = Path(room.repo_path)
    error, change = "", None
    try:
        change = session_change(repo, session.branch, room.default_branch) if session.branch else None
    except GitError:
        error = "git could not read this session's branch."
    seen = _seen(session, change)
    if request.htmx and request.GET.get("seen") == seen:
        return HttpResponse(status=204)  # nothing moved: the page keeps what it shows
    page = Paginator(change.files if change else (), PAGE_FILES).get_page(request.GET.get("page"))
    files = []
    if change is not None and page.object_list:
        try:
            diffs = file_diffs(repo, change, list(page.object_list))
        except GitError:
            diffs, error = {}, "git could not read the diffs of these files."
        for file in page.object_list:
            shown = diff_lines(file.path, diffs[file.path], max_lines=SHOWN_MAX_LINES) if file.path in diffs else None
            files.append((file, shown, table_html(shown) if shown and not shown.binary else ""))
    context = {
        "session": session, "room": room, "change": change, "page": page, "files": files, "error": error,
        "running": session.state not in states.TERMINAL, "poll_seconds": POLL_SECONDS, "seen": seen,
    }
    template = "sessions/_changes.html" if request.htmx else "sessions/changes.html"
    return render(request, template, context)


def _seen(session: Session, change) -> str:
    """What the page shows, in one word: it is sent anew when this changes."""
    return f"{session.state}.{change.tip if change else ''}.{change.merged_by if change else ''}"


@require_GET
def session_patch(request: HttpRequest, session_id: int) -> HttpResponse:
    session: Session = selectors.access_session(request.user, session_id).session
    room = session.task.room
    repo = Path(room.repo_path)
    try:
        change = session_change(repo, session.branch, room.default_branch) if session.branch else None
        patch = change_patch(repo, change) if change else b""
    except GitError:
        return HttpResponse("git could not read this session's branch.\n", status=503,
                            content_type="text/plain; charset=utf-8")
    response = HttpResponse(patch, content_type="text/x-diff; charset=utf-8")
    name = f"session-{session.pk}-{slugify(session.task.title)[:60] or 'task'}.patch"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response

