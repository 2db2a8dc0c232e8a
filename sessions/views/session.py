"""The session page and its controls: steer, cancel, retry, a new segment, approvals and
review overrides. Thin: load through ``access_session``, call one service, render. With
htmx a control gets back the region it changes (``#session-status``, ``#session-steer``);
without it, a redirect with a flash message. A refused action is a sentence on the page,
never a traceback."""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from rooms.errors import RoomError
from sessions import selectors
from sessions.forms import (
    ApprovalDecisionForm,
    SteerForm,
)
from sessions.models import Session, SessionEvent
from sessions.runtime import states
from sessions.selectors import SessionAccess
from sessions.services import approvals, lifecycle, reviews, talk
from sessions.views.analysis import insights_context
from sessions.views.common import flash_result, refusal, require_control

SESSION_LOG_LIMIT = 500  # newest events rendered into the page; older ones are in the admin


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
    return render(request, "sessions/session.html", context)


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
    return render(request, "sessions/_session_status.html", _status_context(access))


@require_http_methods(["GET", "POST"])
def session_steer(request: HttpRequest, session_id: int) -> HttpResponse:
    """POST sends a steer; GET is the steer box alone (the page reloads it when the
    session ends, so no form is left for a session that can no longer hear)."""
    access = selectors.access_session(request.user, session_id)
    if request.method == "GET":
        return render(request, "sessions/_session_steer.html", {**_status_context(access), "steer_form": SteerForm(decisions=selectors.session_decisions(access.session))})
    form = SteerForm(request.POST, decisions=selectors.session_decisions(access.session))
    notice = None
    if form.is_valid():
        try:
            talk.session_steer(session=access.session, actor=request.user, text=form.cleaned_data["text"],
                                   replaces=tuple(form.cleaned_data["replaces"]))
        except RoomError as exc:
            form.add_error("text", refusal(request, exc))
        else:
            notice = "Sent. The agent reads it at its next step boundary; the log shows when it is delivered."
            form = SteerForm(decisions=selectors.session_decisions(access.session))
    if request.htmx:
        return render(request, "sessions/_session_steer.html",
                      {**_status_context(access), "steer_form": form, "steer_notice": notice})
    flash_result(request, notice, "; ".join(form.errors.get("text", []) + form.errors.get("replaces", [])))
    return redirect("sessions:session", session_id=session_id)


@require_POST
def session_new_segment(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    notice = error = None
    try:
        lifecycle.session_request_segment(session=access.session, actor=request.user)
    except RoomError as exc:
        error = refusal(request, exc)
    else:
        notice = "A new segment starts at the next step boundary: a handoff, then a fresh context."
    return _status_response(request, access, notice, error)


@require_POST
def session_cancel(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    notice = error = None
    try:
        lifecycle.session_cancel(session=access.session, actor=request.user)
    except RoomError as exc:
        error = refusal(request, exc)
    else:
        notice = "Cancelled. Jobs it started are being stopped."
    return _status_response(request, access, notice, error)


@require_POST
def session_retry(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    session = access.session
    try:
        require_control(access.room_access)
        retry = lifecycle.session_retry(session=session, actor=request.user)
    except RoomError as exc:
        return _status_response(request, access, None, refusal(request, exc))
    url = reverse("sessions:session", args=[retry.pk])
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
            decided = approvals.approval_decide(approval=approval, actor=request.user,
                                               decision=form.cleaned_data["decision"])
        except RoomError as exc:
            error = refusal(request, exc)
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
        error = refusal(request, exc)
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
        return render(request, "sessions/_session_status.html",
                      _status_context(access, status_notice=notice, status_error=error, status_oob=True))
    flash_result(request, notice, error)
    return redirect("sessions:session", session_id=access.session.pk)
