"""A room's work: its tasks and their sessions, a new task, editing a task's intent,
starting a session, the team panel. Thin: load through ``access_room`` or
``access_task``, call one service, render the region it changes."""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from rooms.errors import RoomError, RoomPermissionError
from rooms.selectors import RoomAccess, access_room
from sessions import selectors, team
from sessions.forms import (
    SessionStartForm,
    TaskForm,
    TaskIntentForm,
)
from sessions.services import lifecycle, tasks
from sessions.views.common import forbid_viewers, refusal


@require_GET
def room_team(request: HttpRequest, slug: str) -> HttpResponse:
    """The team panel: who works on what, agents' mentions, conflicts resolved."""
    access = access_room(request.user, slug)
    return render(request, "sessions/_room_team.html", {"room": access.room, "team": team.room_team(access.room)})


@require_GET
def room_tasks(request: HttpRequest, slug: str) -> HttpResponse:
    """The task list of the work region; the room page reloads it when a session changes."""
    access = access_room(request.user, slug)
    return render(request, "sessions/_room_tasks.html", {"room": access.room, "access": access})


@require_http_methods(["GET", "POST"])
def task_create(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    forbid_viewers(access)
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            task = tasks.task_create(room=access.room, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            notice = f"Task “{task.title}” created; its intent is in {task.intent_path}. Start it with an agent."
            if request.htmx:
                return _work(request, access, "sessions/_room_work.html", work_notice=notice)
            flash.success(request, notice)
            return redirect("room", slug=access.room.slug)
    if request.htmx:
        return _work(request, access, "sessions/_room_work.html", task_form=form)
    return render(request, "sessions/task_form.html", {"room": access.room, "form": form, "task": None})


@require_http_methods(["GET", "POST"])
def task_intent(request: HttpRequest, task_id: int) -> HttpResponse:
    """Edit a task's intent; running sessions re-read the file at their next boundary."""
    access = selectors.access_task(request.user, task_id)
    room, task = access.room_access.room, access.task
    forbid_viewers(access.room_access)
    initial = {f: getattr(task, f) for f in ("objective", "definition_of_done", "prerequisites", "constraints")}
    form = TaskIntentForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            tasks.task_update_intent(task=task, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            flash.success(request, f"Intent of “{task.title}” saved; running sessions read it at their next step.")
            return redirect("room", slug=room.slug)
    return render(request, "sessions/task_form.html", {"room": room, "form": form, "task": task})


@require_POST
def task_start(request: HttpRequest, task_id: int) -> HttpResponse:
    access = selectors.access_task(request.user, task_id)
    room_access, task = access.room_access, access.task
    form = SessionStartForm(request.POST, room=room_access.room)
    notice = error = None
    if not form.is_valid():
        error = " ".join(form.errors["agent"])
    else:
        try:
            session = lifecycle.session_start(task=task, agent=form.cleaned_data["agent"], actor=request.user)
        except RoomError as exc:
            error = refusal(request, exc)
        else:
            notice = f"{session.agent.name} started on “{task.title}” (attempt {session.attempt})."
            if not request.htmx:
                flash.success(request, notice)
                return redirect("sessions:session", session_id=session.pk)
    if request.htmx:
        return _work(request, room_access, "sessions/_room_tasks.html", work_notice=notice, work_error=error,
                     status_oob=True)
    flash.error(request, error)
    return redirect("room", slug=room_access.room.slug)


def _work(request: HttpRequest, access: RoomAccess, template: str, **extra: Any) -> HttpResponse:
    return render(request, template, {"room": access.room, "access": access, **extra})
