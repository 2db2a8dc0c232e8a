from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.selectors import access_session
from observations.blobs import blob_text
from observations.models import Observation
from observations.selectors import session_ledger


@require_GET
def ledger(request: HttpRequest, session_id: int) -> HttpResponse:
    access = access_session(request.user, session_id)
    groups, folds, totals = session_ledger(access.session)
    return render(
        request,
        "observations/ledger.html",
        {"session": access.session, "room": access.room_access.room, "groups": groups, "folds": folds,
         "totals": totals},
    )


@require_GET
def observation_text(request: HttpRequest, session_id: int, seq: int) -> HttpResponse:
    """The exact text of one tool result; like all content, readable only inside its room."""
    access = access_session(request.user, session_id)
    observation = Observation.objects.select_related("blob").filter(session=access.session, seq=seq).first()
    if observation is None:
        raise Http404("No such observation in this session.")
    return render(request, "observations/observation.html", {
        "session": access.session, "room": access.room_access.room, "o": observation,
        "text": blob_text(observation.blob),
    })
