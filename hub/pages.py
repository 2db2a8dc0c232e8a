"""The pages that show every app at once: the room list and the room page. They live in
the entry point because they are composed of every app's panels (rooms' people and
history, the room's agents, sessions' work and figures, the endpoint's keys, evals' runs),
and no app below may import the ones above it (docs/architecture.md, "Layers")."""

from __future__ import annotations

from django.db.models import OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from rooms.selectors import access_room, messages_page, room_agents, rooms_for_user
from rooms.views.agents import AgentAssignForm
from rooms.views.rooms import room_panels
from sessions.selectors import room_list_counts


@require_GET
def room_list(request: HttpRequest) -> HttpResponse:
    rooms = rooms_for_user(request.user).annotate(**room_list_counts(OuterRef("pk")))
    return render(request, "hub/room_list.html", {"rooms": rooms})


@require_GET
def room_page(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    history, has_older = messages_page(access.room)
    context = {
        **room_panels(access),
        "room_agents": room_agents(access.room),
        "agent_form": AgentAssignForm(room=access.room),
        "history": history,
        "has_older": has_older,
        "last_seq": history[-1].seq if history else 0,
    }
    return render(request, "hub/room.html", context)
