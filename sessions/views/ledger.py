"""A session's observation ledger and the exact text of each tool result.

The ledger's data is the core's (sessions.ledger.selectors); who may see a session is
agents' (``access_session``), so the pages live here, above both.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from observations.blobs import blob_text
from sessions.ledger.selectors import fold_savings, session_ledger
from sessions.models import Observation
from sessions.selectors import access_session, session_request_steps


@require_GET
def ledger(request: HttpRequest, session_id: int) -> HttpResponse:
    access = access_session(request.user, session_id)
    session = access.session
    groups, folds, totals = session_ledger(session)
    savings = fold_savings(folds, session_request_steps(session), session.agent.price_for(session.agent.model))
    receipted = [row for group in groups for row in group.rows if row.saw_a_receipt]
    return render(
        request,
        "sessions/ledger.html",
        {"session": session, "room": access.room_access.room, "groups": groups, "folds": savings,
         "totals": totals, "receipted": receipted},
    )


@require_GET
def observation_text(request: HttpRequest, session_id: int, seq: int) -> HttpResponse:
    """The exact text of one tool result; like all content, readable only inside its room."""
    access = access_session(request.user, session_id)
    observation = Observation.objects.select_related("blob").filter(session=access.session, seq=seq).first()
    if observation is None:
        raise Http404("No such observation in this session.")
    return render(request, "sessions/observation.html", {
        "session": access.session, "room": access.room_access.room, "o": observation,
        "text": blob_text(observation.blob),
    })
