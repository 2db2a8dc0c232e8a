"""The room page's gateway keys panel (``#gateway-keys``): the room's keys, a form to
make one for an agent of the room, and revoke buttons. It loads itself on the room page
(``hx-get``); every form posts with htmx and gets the panel back, the new key's token
shown in it once. Without htmx, a full page (agents/gateway_keys.html).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from endpoint.keys import (
    NAME_MAX_LENGTH,
    gateway_key_create,
    gateway_key_revoke,
    keyable_agents,
    room_gateway_keys,
)
from rooms.errors import RoomError, RoomPermissionError, attempt
from rooms.models import Room
from rooms.selectors import RoomAccess, access_room


class GatewayKeyForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, help_text="What will use it, e.g. “laptop aider”.")
    agent = forms.TypedChoiceField(coerce=int, help_text="Its model and upstream key are the agent's.")

    def __init__(self, *args: Any, room: Room, user: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [(a.pk, f"{a.name} ({a.model})") for a in keyable_agents(room, user)]


@require_GET
def gateway_keys(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    return _panel(request, access)


@require_POST
def gateway_key_new(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = GatewayKeyForm(request.POST, room=access.room, user=request.user)
    token = None
    if form.is_valid():
        try:
            made = gateway_key_create(room=access.room, actor=request.user, agent_id=form.cleaned_data["agent"],
                                      name=form.cleaned_data["name"])
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            token, form = made.token, GatewayKeyForm(room=access.room, user=request.user)
    return _panel(request, access, key_form=form, token=token)


@require_POST
def gateway_key_revoke_view(request: HttpRequest, slug: str, key_id: int) -> HttpResponse:
    access = access_room(request.user, slug)
    error = attempt(gateway_key_revoke, room=access.room, actor=request.user, key_id=key_id)
    return _panel(request, access, keys_error=error, keys_notice=None if error else "Key revoked.")


def _panel(request: HttpRequest, access: RoomAccess, **extra: Any) -> HttpResponse:
    base = request.build_absolute_uri(reverse("endpoint:gateway_keys", args=[access.room.slug]))
    context = {
        "room": access.room,
        "access": access,
        "keys": list(room_gateway_keys(access.room)),
        "key_form": GatewayKeyForm(room=access.room, user=request.user),
        "base_url": base.split("/rooms/", 1)[0] + "/v1",
        "user_id": request.user.pk,
        **extra,
    }
    template = "endpoint/_gateway_keys.html" if request.htmx else "endpoint/gateway_keys.html"
    return render(request, template, context)
