"""A room's upstream on demand: a member asks for it to be fetched now (a worker does
it; the room is told what it came to)."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from rooms.models import RoomUpstream
from rooms.selectors import access_room
from rooms.tasks import fetch_upstream


@require_POST
def upstream_fetch(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    if not access.can_post:
        raise PermissionDenied("Viewers do not fetch the upstream.")
    if not RoomUpstream.objects.filter(room=access.room).exists():
        raise Http404("This room has no upstream.")
    fetch_upstream.delay(access.room.pk)
    flash.info(request, "Fetching the upstream: the room is told what it comes to.")
    return redirect("room", slug=access.room.slug)
