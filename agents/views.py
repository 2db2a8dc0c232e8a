"""Agent pages: profiles (every signed-in person may create one and use anyone's in
their rooms; only its creator, or staff, may change it), a room's tasks, and the
session page with its controls.

Thin: load through ``access_room`` / ``access_task`` / ``access_session``, call one
service, render. With htmx a control gets back the region it changes (``#room-work``,
``#room-tasks``, ``#session-status``, ``#session-steer``); without it, a redirect with
a flash message. A refused action is a sentence on the page, never a traceback.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from agents import reviews, selectors, services, team
from agents.forms import (
    AgentProfileForm,
    ApprovalDecisionForm,
    SessionStartForm,
    SteerForm,
    TaskForm,
    TaskIntentForm,
)
from agents.models import AgentProfile, Session, SessionEvent
from agents.runtime import states
from agents.selectors import SessionAccess
from agents.views_analysis import insights_context
from rooms.checks import check_may_act
from rooms.errors import RoomError, RoomPermissionError
from rooms.selectors import RoomAccess, access_room

SESSION_LOG_LIMIT = 500  # newest events rendered into the page; older ones are in the admin


@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = AgentProfile.objects.annotate(room_count=Count("room_agents")).select_related("created_by")
    rows = [(agent, selectors.can_edit_profile(request.user, agent)) for agent in agents.order_by("name")]
    return render(request, "agents/list.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
def agent_create(request: HttpRequest) -> HttpResponse:
    form = AgentProfileForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        agent = services.agent_profile_save(profile=form.save(commit=False), actor=request.user)
        flash.success(request, f"Agent {agent.name} created.")
        _warn_specs(request, form.instance)
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": None})


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = selectors.access_profile_for_edit(request.user, agent_id)
    form = AgentProfileForm(request.POST or None, instance=agent)
    if request.method == "POST" and form.is_valid():
        try:
            services.agent_profile_save(profile=form.save(commit=False), actor=request.user)
        except RoomPermissionError as exc:  # ownership changed since the page was loaded
            raise PermissionDenied(exc.message) from exc
        flash.success(request, f"Agent {agent.name} saved.")
        _warn_specs(request, form.instance)
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": agent})


def _warn_specs(request: HttpRequest, agent: AgentProfile) -> None:
    """Saved, but not usable yet (e.g. no API key): say so now, not as a failed session later."""
    for warning in getattr(agent, "spec_warnings", ()):
        flash.warning(request, f"{agent.name}: {warning}")


# --- a room's tasks ---------------------------------------------------------------------------


@require_GET
def room_team(request: HttpRequest, slug: str) -> HttpResponse:
    """The team panel: who works on what, agents' mentions, conflicts resolved."""
    access = access_room(request.user, slug)
    return render(request, "agents/_room_team.html", {"room": access.room, "team": team.room_team(access.room)})


@require_GET
def room_tasks(request: HttpRequest, slug: str) -> HttpResponse:
    """The task list of the work region; the room page reloads it when a session changes."""
    access = access_room(request.user, slug)
    return render(request, "agents/_room_tasks.html", {"room": access.room, "access": access})


@require_http_methods(["GET", "POST"])
def task_create(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    _forbid_viewers(access)
    form = TaskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            task = services.task_create(room=access.room, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            notice = f"Task “{task.title}” created; its intent is in {task.intent_path}. Start it with an agent."
            if request.htmx:
                return _work(request, access, "rooms/_room_work.html", work_notice=notice)
            flash.success(request, notice)
            return redirect("rooms:detail", slug=access.room.slug)
    if request.htmx:
        return _work(request, access, "rooms/_room_work.html", task_form=form)
    return render(request, "agents/task_form.html", {"room": access.room, "form": form, "task": None})


@require_http_methods(["GET", "POST"])
def task_intent(request: HttpRequest, task_id: int) -> HttpResponse:
    """Edit a task's intent; running sessions re-read the file at their next boundary."""
    access = selectors.access_task(request.user, task_id)
    room, task = access.room_access.room, access.task
    _forbid_viewers(access.room_access)
    initial = {f: getattr(task, f) for f in ("objective", "definition_of_done", "prerequisites", "constraints")}
    form = TaskIntentForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.task_update_intent(task=task, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            flash.success(request, f"Intent of “{task.title}” saved; running sessions read it at their next step.")
            return redirect("rooms:detail", slug=room.slug)
    return render(request, "agents/task_form.html", {"room": room, "form": form, "task": task})


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
            session = services.session_start(task=task, agent=form.cleaned_data["agent"], actor=request.user)
        except RoomError as exc:
            error = _refusal(request, exc)
        else:
            notice = f"{session.agent.name} started on “{task.title}” (attempt {session.attempt})."
            if not request.htmx:
                flash.success(request, notice)
                return redirect("agents:session", session_id=session.pk)
    if request.htmx:
        return _work(request, room_access, "agents/_room_tasks.html", work_notice=notice, work_error=error,
                     status_oob=True)
    flash.error(request, error)
    return redirect("rooms:detail", slug=room_access.room.slug)


def _work(request: HttpRequest, access: RoomAccess, template: str, **extra: Any) -> HttpResponse:
    return render(request, template, {"room": access.room, "access": access, **extra})


# --- the session page -----------------------------------------------------------------------


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    events, left_out = selectors.session_events_tail(access.session, SESSION_LOG_LIMIT)
    context = {
        **_status_context(access),
        "events": events,
        "events_left_out": left_out,
        "last_seq": events[-1].seq if events else 0,
        "waiting_since": _waiting_for_model(access.session, events),
        "steer_form": SteerForm(decisions=selectors.session_decisions(access.session)),
        "segments": selectors.session_segments(access.session),
        **insights_context(access.session),
    }
    return render(request, "agents/session.html", context)


def _waiting_for_model(session: Session, events: list[SessionEvent]) -> str:
    """When the session's request went to its model, if nothing happened since."""
    since = session.model_waiting_since
    if session.state != states.RUNNING or since is None or (events and events[-1].created_at > since):
        return ""
    return since.isoformat()


@require_GET
def session_status(request: HttpRequest, session_id: int) -> HttpResponse:
    """Header, token gauge, approvals and controls; reloaded when an event changes them."""
    access = selectors.access_session(request.user, session_id)
    return render(request, "agents/_session_status.html", _status_context(access))


@require_http_methods(["GET", "POST"])
def session_steer(request: HttpRequest, session_id: int) -> HttpResponse:
    """POST sends a steer; GET is the steer box alone (the page reloads it when the
    session ends, so no form is left for a session that can no longer hear)."""
    access = selectors.access_session(request.user, session_id)
    if request.method == "GET":
        return render(request, "agents/_session_steer.html", {**_status_context(access), "steer_form": SteerForm(decisions=selectors.session_decisions(access.session))})
    form = SteerForm(request.POST, decisions=selectors.session_decisions(access.session))
    notice = None
    if form.is_valid():
        try:
            services.session_steer(session=access.session, actor=request.user, text=form.cleaned_data["text"],
                                   replaces=tuple(form.cleaned_data["replaces"]))
        except RoomError as exc:
            form.add_error("text", _refusal(request, exc))
        else:
            notice = "Sent. The agent reads it at its next step boundary; the log shows when it is delivered."
            form = SteerForm(decisions=selectors.session_decisions(access.session))
    if request.htmx:
        return render(request, "agents/_session_steer.html",
                      {**_status_context(access), "steer_form": form, "steer_notice": notice})
    _flash(request, notice, "; ".join(form.errors.get("text", []) + form.errors.get("replaces", [])))
    return redirect("agents:session", session_id=session_id)


@require_POST
def session_new_segment(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    notice = error = None
    try:
        services.session_request_segment(session=access.session, actor=request.user)
    except RoomError as exc:
        error = _refusal(request, exc)
    else:
        notice = "A new segment starts at the next step boundary: a handoff, then a fresh context."
    return _status_response(request, access, notice, error)


@require_POST
def session_cancel(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    notice = error = None
    try:
        services.session_cancel(session=access.session, actor=request.user)
    except RoomError as exc:
        error = _refusal(request, exc)
    else:
        notice = "Cancelled. Jobs it started are being stopped."
    return _status_response(request, access, notice, error)


@require_POST
def session_retry(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    session = access.session
    try:
        _require_control(access.room_access)
        retry = services.session_retry(session=session, actor=request.user)
    except RoomError as exc:
        return _status_response(request, access, None, _refusal(request, exc))
    url = reverse("agents:session", args=[retry.pk])
    flash.success(request, f"Retry dispatched: attempt {retry.attempt}, linked to attempt {session.attempt}.")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
def approval_decide(request: HttpRequest, session_id: int, approval_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    approval = selectors.session_approval(access.session, approval_id)
    form = ApprovalDecisionForm(request.POST)
    notice = error = None
    if not form.is_valid():
        error = "Decide approve, deny or always."
    else:
        try:
            decided = services.approval_decide(approval=approval, actor=request.user,
                                               decision=form.cleaned_data["decision"])
        except RoomError as exc:
            error = _refusal(request, exc)
        else:
            notice = f"{decided.tool} {decided.state}{' for the rest of this session' if decided.always else ''}."
    return _status_response(request, access, notice, error)


@require_POST
def review_override(request: HttpRequest, session_id: int, review_id: int) -> HttpResponse:
    """A person decides a review round: approve anyway, or request changes in their words."""
    access = selectors.access_session(request.user, session_id)
    notice = error = None
    decision = request.POST.get("decision", "")
    try:
        review = reviews.session_review(access.session, review_id)
        reviews.review_override(review=review, actor=request.user, decision=decision,
                                reasons=request.POST.get("reasons", ""))
    except RoomError as exc:
        error = _refusal(request, exc)
    else:
        notice = ("Approved: the session merges." if decision == "approve" else
                  "Changes requested: the session gets your words and works on.")
    return _status_response(request, access, notice, error)


def _status_context(access: SessionAccess, **extra: Any) -> dict[str, Any]:
    session = access.session
    return {
        "session": session,
        "room": access.room_access.room,
        "can_control": access.can_control,
        "ended": session.state in states.TERMINAL,
        "retryable": session.state in states.TERMINAL | {states.NEEDS_MERGE},
        "gauge": selectors.session_gauge(session),
        "approvals": selectors.pending_approvals(session),
        "next_attempt": selectors.session_next_attempt(session),
        "decisions": selectors.session_decisions(session),
        "loop_suspected": selectors.session_loop_alarms(session),
        "reviews": reviews.session_reviews(session),
        "review_of": reviews.reviewed_session(session),
        **extra,
    }


def _status_response(request: HttpRequest, access: SessionAccess, notice: str | None,
                     error: str | None) -> HttpResponse:
    if request.htmx:
        access.session.refresh_from_db()
        return render(request, "agents/_session_status.html",
                      _status_context(access, status_notice=notice, status_error=error, status_oob=True))
    _flash(request, notice, error)
    return redirect("agents:session", session_id=access.session.pk)


def _require_control(access: RoomAccess) -> None:
    check_may_act(access.membership)


def _forbid_viewers(access: RoomAccess) -> None:
    """For form pages: a viewer gets a 403 page saying why, not a form they cannot use."""
    try:
        _require_control(access)
    except RoomPermissionError as exc:
        raise PermissionDenied(exc.message) from exc


def _refusal(request: HttpRequest, exc: RoomError) -> str:
    """The sentence for a refused action; a forbidden one is a 403 outside htmx."""
    if isinstance(exc, RoomPermissionError) and not request.htmx:
        raise PermissionDenied(exc.message) from exc
    return exc.message


def _flash(request: HttpRequest, notice: str | None, error: str | None) -> None:
    if notice:
        flash.success(request, notice)
    if error:
        flash.error(request, error)
