"""Pages that read sessions back: the session page's insights region (analysis, charts,
prefix breakdown, loop alarms), the transcript download, an agent's page, and a room's
totals. Read-only; every load goes through ``access_session`` / ``access_room``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from agents import selectors as agent_selectors
from agents.models import AgentProfile
from observations.gateway.prices import format_usd
from rooms.selectors import access_room
from sessions import selectors
from sessions.analysis.chart import context_chart, cost_chart
from sessions.analysis.prefix import latest_breakdown
from sessions.analysis.selectors import session_facts
from sessions.analysis.trace import Analysis, analyze
from sessions.analysis.transcript import render_transcript
from sessions.ledger.selectors import room_store_savings
from sessions.models import Session
from sessions.services import records


def insights_context(session: Session) -> dict[str, Any]:
    facts = session_facts(session)
    analysis = analyze(facts)
    return {
        "analysis": analysis,
        "analysis_rows": analysis.rows(),
        "cost_label": format_usd(analysis.cost),
        "context_chart": mark_safe(context_chart(facts)),  # noqa: S308 - built with every text escaped
        "cost_chart": mark_safe(cost_chart(facts)),  # noqa: S308
        "breakdown": latest_breakdown(facts.calls),
        "loop_alarms": [e.payload for e in facts.events if e.kind == "loop.suspected"],
        "folds": facts.folds,
    }


@require_GET
def session_insights(request: HttpRequest, session_id: int) -> HttpResponse:
    """The insights region; the page reloads it when a step, a fold or an alarm arrives."""
    access = selectors.access_session(request.user, session_id)
    return render(request, "sessions/_session_insights.html", {"session": access.session,
                                                              **insights_context(access.session)})


@require_GET
def session_transcript(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    session = access.session
    text = render_transcript(session_facts(session))
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    name = f"session-{session.pk}-{slugify(session.task.title)[:60] or 'task'}.md"
    disposition = "attachment" if request.GET.get("download", "1") != "0" else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{name}"'
    return response


@require_GET
def room_totals(request: HttpRequest, slug: str) -> HttpResponse:
    """The room's totals panel; the room page reloads it when a session changes."""
    access = access_room(request.user, slug)
    return render(request, "sessions/_room_totals.html", {"room": access.room, "totals": room_totals_of(access.room)})


@require_GET
def room_store(request: HttpRequest, slug: str) -> HttpResponse:
    """The shared-store panel: loaded after the page (one aggregate over every
    observation of the room) and again when a session of the room changes."""
    access = access_room(request.user, slug)
    savings = room_store_savings(access.room.pk)
    return render(request, "sessions/_room_store.html", {"room": access.room, "savings": savings})


def room_totals_of(room) -> dict[str, Any]:
    return totals_context(records.sessions_analysis_totals(Session.objects.filter(task__room=room)))


@require_GET
def agent_detail(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(AgentProfile, pk=agent_id)
    sessions = selectors.agent_sessions_for(request.user, agent)
    recent = sessions.without_state().select_related("task", "task__room").order_by("-created_at", "-pk")[:50]
    return render(request, "sessions/agent_detail.html", {
        "agent": agent, "totals": totals_context(records.sessions_analysis_totals(sessions)),
        "sessions": recent, "price": agent.price_for(agent.model),
        "editable": agent_selectors.can_edit_profile(request.user, agent),
    })


def totals_context(totals: dict[str, Any]) -> dict[str, Any]:
    """Totals as the panels show them: the same rows as one session's analysis."""
    fields = {name: totals.get(name, 0) for name in Analysis.__dataclass_fields__ if name in totals}
    summary = Analysis(**fields)
    rows = [("Sessions", f"{totals['sessions']:,}")] + [
        row for row in summary.rows() if row[0] not in {"Parallel steps", "Phases (model calls)"}
    ]
    return {"rows": rows, "cost": format_usd(totals.get("cost")), "sessions": totals["sessions"],
            "loop_alarms": totals.get("loop_alarms", 0)}
