"""Room pages. Thin: load through ``access_room``, call one service, render.

With htmx, the member form posts here and gets back just the panel it replaces
(``#members``); without it, a redirect to the room page. The agents panel is agents'
(agents.room_agents).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from observations.selectors import room_store_savings
from rooms import selectors, services
from rooms.errors import RoomError, RoomPermissionError, attempt
from rooms.forms import MemberAddForm, RoomCreateForm
from rooms.selectors import RoomAccess


@require_GET
def room_list(request: HttpRequest) -> HttpResponse:
    return render(request, "rooms/list.html", {"rooms": selectors.rooms_for_user(request.user)})


@require_http_methods(["GET", "POST"])
def room_create(request: HttpRequest) -> HttpResponse:
    form = RoomCreateForm(request.POST or None, request.FILES or None)
    try:
        if request.method == "POST" and form.is_valid():
            try:
                room = services.room_create(
                    owner=request.user,
                    name=form.cleaned_data["name"],
                    source=form.repository,
                    check_command=form.cleaned_data["check_command"],
                )
            except RoomError as exc:
                fields = {form.CLONE: "clone_path", form.BUNDLE: "bundle"}
                form.add_error(fields.get(form.cleaned_data["source"]) if exc.code == "repo" else None, exc.message)
            else:
                return redirect("rooms:detail", slug=room.slug)
    finally:
        form.discard_upload()
    return render(request, "rooms/create.html", {"form": form})


@require_GET
def room_detail(request: HttpRequest, slug: str) -> HttpResponse:
    access = selectors.access_room(request.user, slug)
    history, has_older = selectors.messages_page(access.room)
    context = {
        **_panels(access),
        "history": history,
        "has_older": has_older,
        "last_seq": history[-1].seq if history else 0,
    }
    return render(request, "rooms/room.html", context)


@require_GET
def room_messages(request: HttpRequest, slug: str) -> HttpResponse:
    """One older page of history, for the "load older" button."""
    access = selectors.access_room(request.user, slug)
    try:
        before = int(request.GET["before"])
    except (KeyError, ValueError):
        return HttpResponseBadRequest("before must be a message seq")
    history, has_older = selectors.messages_page(access.room, before_seq=before)
    return render(
        request, "rooms/_history_page.html", {"room": access.room, "history": history, "has_older": has_older}
    )


@require_GET
def room_store(request: HttpRequest, slug: str) -> HttpResponse:
    """The shared-store panel: loaded after the page (one aggregate over every
    observation of the room) and again when a session of the room changes."""
    access = selectors.access_room(request.user, slug)
    savings = room_store_savings(access.room.pk)
    return render(request, "rooms/_room_store.html", {"room": access.room, "savings": savings})


@require_POST
def member_add(request: HttpRequest, slug: str) -> HttpResponse:
    access = selectors.access_room(request.user, slug)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            services.membership_add(room=access.room, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error("username", exc.message)
        else:
            form = MemberAddForm()
    return _panel_response(request, access, "rooms/_members.html", member_form=form)


@require_POST
def member_remove(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    access = selectors.access_room(request.user, slug)
    error = attempt(services.membership_remove, room=access.room, actor=request.user, user_id=user_id)
    return _panel_response(request, access, "rooms/_members.html", members_error=error)


def _panels(access: RoomAccess, **extra: Any) -> dict[str, Any]:
    room = access.room
    return {
        "room": room,
        "access": access,
        "members": selectors.room_members(room),
        "member_form": MemberAddForm(),
        **extra,
    }


def _panel_response(request: HttpRequest, access: RoomAccess, template: str, **extra: Any) -> HttpResponse:
    if request.htmx:
        return render(request, template, _panels(access, **extra))
    if extra.get("members_error"):
        flash.error(request, extra["members_error"])
    form = extra.get("member_form")
    if form is not None and form.errors:
        for errors in form.errors.values():
            for error in errors:
                flash.error(request, error)
    return redirect("rooms:detail", slug=access.room.slug)
