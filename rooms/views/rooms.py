"""Room pages: a new room, its people, its older history. Thin: load through
``access_room``, call one service, render. The room page and the room list are the
hub's (hub.pages), which compose rooms' panels with those of the apps above.

With htmx, the member form posts here and gets back just the panel it replaces
(``#members``); without it, a redirect to the room page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from rooms import selectors, services
from rooms.errors import RoomError, RoomPermissionError, attempt
from rooms.forms import MemberAddForm, RoomCreateForm
from rooms.selectors import RoomAccess


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("upstream_token")
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
                fields = {form.CLONE: "clone_path", form.BUNDLE: "bundle", form.UPSTREAM: "upstream_url"}
                form.add_error(fields.get(form.cleaned_data["source"]) if exc.code == "repo" else None, exc.message)
            else:
                return redirect("room", slug=room.slug)
    finally:
        form.discard_upload()
    return render(request, "rooms/create.html", {"form": form})


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


def room_panels(access: RoomAccess, **extra: Any) -> dict[str, Any]:
    """The context of the room page's people panel (the page itself is the hub's:
    hub.pages.room_page composes every app's panels)."""
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
        return render(request, template, room_panels(access, **extra))
    if extra.get("members_error"):
        flash.error(request, extra["members_error"])
    form = extra.get("member_form")
    if form is not None and form.errors:
        for errors in form.errors.values():
            for error in errors:
                flash.error(request, error)
    return redirect("room", slug=access.room.slug)
