"""The room's settings panel (``#room-settings``): its check command, network access and
approval rules. Every member sees what runs in the room; only owners change it (the
services refuse anyone else). With htmx each form gets the panel back; without it, a
redirect to the settings page with a flash message.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from agents import services
from agents.forms import ApprovalRuleForm
from agents.models import ApprovalRule
from rooms.errors import attempt
from rooms.forms import RoomSettingsForm
from rooms.selectors import RoomAccess, access_room
from rooms.services import room_settings_update


@require_http_methods(["GET", "POST"])
def room_settings(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    room = access.room
    form = RoomSettingsForm(request.POST or None,
                            initial={"check_command": room.check_command, "allow_network": room.allow_network})
    notice = None
    if request.method == "POST" and form.is_valid():
        error = attempt(room_settings_update, room=room, actor=request.user, **form.cleaned_data)
        if error:
            form.add_error(None, error)
        else:
            notice = "Settings saved."
    return _panel(request, access, settings_form=form, settings_notice=notice)


@require_POST
def approval_rule_add(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = ApprovalRuleForm(request.POST)
    notice = None
    if form.is_valid():
        error = attempt(services.approval_rule_create, room=access.room, actor=request.user, **form.cleaned_data)
        if error:
            form.add_error(None, error)
        else:
            notice, form = "Rule added; it applies from the next tool call.", ApprovalRuleForm()
    return _panel(request, access, rule_form=form, rules_notice=notice)


@require_POST
def approval_rule_remove(request: HttpRequest, slug: str, rule_id: int) -> HttpResponse:
    access = access_room(request.user, slug)
    error = attempt(services.approval_rule_delete, room=access.room, actor=request.user, rule_id=rule_id)
    return _panel(request, access, rules_notice=None if error else "Rule removed.", rules_error=error)


def _panel(request: HttpRequest, access: RoomAccess, **extra: Any) -> HttpResponse:
    room = access.room
    room.refresh_from_db(fields=["check_command", "allow_network"])
    context = {
        "room": room,
        "access": access,
        "can_configure": access.can_configure,
        "rules": [(rule, services.rule_text(rule)) for rule in ApprovalRule.objects.filter(room=room).order_by("pk")],
        "settings_form": RoomSettingsForm(initial={"check_command": room.check_command,
                                                   "allow_network": room.allow_network}),
        "rule_form": ApprovalRuleForm(),
        **extra,
    }
    if request.method == "POST" and not request.htmx:
        for key in ("settings_notice", "rules_notice"):
            if extra.get(key):
                flash.success(request, extra[key])
        if extra.get("rules_error"):
            flash.error(request, extra["rules_error"])
        for form in (extra.get("settings_form"), extra.get("rule_form")):
            for errors in (form.errors.values() if form is not None else ()):
                for error in errors:
                    flash.error(request, error)
        return redirect("agents:room_settings", slug=room.slug)
    template = "agents/_room_settings.html" if request.htmx else "agents/room_settings.html"
    return render(request, template, context)
