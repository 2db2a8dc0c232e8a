from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.selectors import access_session
from observations.selectors import session_ledger


@require_GET
def ledger(request: HttpRequest, session_id: int) -> HttpResponse:
    access = access_session(request.user, session_id)
    rows, folds, totals = session_ledger(access.session)
    return render(
        request,
        "observations/ledger.html",
        {"session": access.session, "room": access.room_access.room, "rows": rows, "folds": folds, "totals": totals},
    )
