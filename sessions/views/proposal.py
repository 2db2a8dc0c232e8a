"""A proposed session's pull request, read again from its forge on a person's asking
(a forge is someone else's server: never on every page view)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from rooms import forges, upstream_link
from sessions import selectors
from sessions.models import SessionProposal


@require_POST
def proposal_refresh(request: HttpRequest, session_id: int) -> HttpResponse:
    access = selectors.access_session(request.user, session_id)
    session = access.session
    if not access.can_control:  # each look is a call with the room creator's token
        raise PermissionDenied("Viewers see the pull request's state as last read.")
    proposal = SessionProposal.objects.filter(session=session).first()
    if proposal is not None:
        try:
            now = upstream_link.proposal_now(session.task.room, proposal.number)
        except forges.ForgeError as exc:
            messages.error(request, f"The pull request's state could not be read: {exc}")
        else:
            proposal.state = now.state
            proposal.save(update_fields=["state", "checked_at"])
    return redirect("sessions:session", session_id=session.pk)
