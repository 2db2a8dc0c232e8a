"""The agents panel of a room page (``#agents``): members and owners assign agent
profiles to the room and unassign them. The room page is rooms'; it shows this panel
through the ``session_work`` template tags, and the panel's forms post here.

With htmx a post gets back just the panel (and the composer's target list, out of
band), and a change raises ``room-agents-changed`` (HX-Trigger) for the panels that
depend on who is assigned: the gateway keys, the settings' reviewer choice and the
tasks' start buttons reload themselves. Without htmx, a redirect to the room page.
The panel reloads itself (``agents_panel``) when the reviewer changes in the settings.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.models import AgentProfile
from rooms import selectors, services
from rooms.errors import attempt
from rooms.models import Room
from rooms.selectors import RoomAccess, access_room


class AgentAssignForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=AgentProfile.objects.none(),
        empty_label=None,
        widget=forms.Select(attrs={"aria-label": "Agent to assign"}),
    )

    def __init__(self, *args, room: Room, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = selectors.assignable_agents(room)


AGENTS_CHANGED = "room-agents-changed"  # an HX-Trigger event: who is assigned changed


@require_GET
def agents_panel(request: HttpRequest, slug: str) -> HttpResponse:
    # A reload: the composer's target (out of band) stays as the person set it.
    return _panel_response(request, access_room(request.user, slug), None, reload=True)


@require_POST
def agent_assign(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = AgentAssignForm(request.POST, room=access.room)
    if form.is_valid():
        error = attempt(services.agent_assign, room=access.room, actor=request.user, agent=form.cleaned_data["agent"])
    else:
        error = "; ".join(e for errors in form.errors.values() for e in errors)
    return _panel_response(request, access, error, changed=error is None)


@require_POST
def agent_unassign(request: HttpRequest, slug: str, agent_id: int) -> HttpResponse:
    access = access_room(request.user, slug)
    error = attempt(services.agent_unassign, room=access.room, actor=request.user, agent_id=agent_id)
    return _panel_response(request, access, error, changed=error is None)


def _panel_response(request: HttpRequest, access: RoomAccess, error: str | None, *,
                    changed: bool = False, reload: bool = False) -> HttpResponse:
    if request.htmx:
        room = access.room
        response = render(request, "rooms/_agents.html", {
            "room": room, "access": access, "room_agents": selectors.room_agents(room),
            "agent_form": AgentAssignForm(room=room), "agents_error": error, "reload": reload,
        })
        if changed:
            response["HX-Trigger"] = AGENTS_CHANGED
        return response
    if error:
        flash.error(request, error)
    return redirect("room", slug=access.room.slug)
