"""A room's settings panel: its check command and approval rules, with a preview of
what the rules do with a sample call. Everyone in the room reads them; owners change
them (the services refuse anyone else). With htmx every form gets the panel back
(``#room-settings``) and the preview gets itself back (``#rule-preview``); without it,
a full page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import services
from agents.forms import ApprovalRuleForm, CheckCommandForm, RulePreviewForm
from agents.models import ApprovalRule
from agents.rules import as_rule, room_rules
from agents.runtime.rule_preview import preview
from rooms.errors import RoomError, RoomPermissionError
from rooms.selectors import RoomAccess, access_room
from rooms.services import room_update_settings


@require_http_methods(["GET", "POST"])
def room_settings(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = CheckCommandForm(request.POST or None, initial={"check_command": access.room.check_command})
    notice = None
    if request.method == "POST" and form.is_valid():
        try:
            room = room_update_settings(room=access.room, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error("check_command", exc.message)
        else:
            access = RoomAccess(room=room, membership=access.membership)
            notice = "Check command saved; sessions run it the next time they finish."
            form = CheckCommandForm(initial={"check_command": room.check_command})
    return _panel(request, access, check_form=form, settings_notice=notice)


@require_POST
def rule_create(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = ApprovalRuleForm(request.POST)
    notice = None
    if form.is_valid():
        try:
            services.approval_rule_create(room=access.room, actor=request.user, **form.cleaned_data)
        except RoomPermissionError as exc:
            raise PermissionDenied(exc.message) from exc
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            notice = "Rule added; running sessions apply it from their next tool call."
            form = ApprovalRuleForm()
    return _panel(request, access, rule_form=form, settings_notice=notice)


@require_POST
def rule_delete(request: HttpRequest, slug: str, rule_id: int) -> HttpResponse:
    access = access_room(request.user, slug)
    error = notice = None
    try:
        services.approval_rule_delete(room=access.room, actor=request.user, rule_id=rule_id)
    except RoomPermissionError as exc:
        raise PermissionDenied(exc.message) from exc
    except RoomError as exc:
        error = exc.message
    else:
        notice = "Rule removed."
    return _panel(request, access, settings_notice=notice, settings_error=error)


@require_GET
def rule_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """What the room's rules would decide for a sample call (read-only, for anyone in the room)."""
    access = access_room(request.user, slug)
    form = RulePreviewForm(request.GET or None)
    result = None
    if form.is_valid():
        result = preview(form.cleaned_data["tool"], form.cleaned_data["sample"], room_rules(access.room.pk))
    if request.htmx:
        return render(request, "agents/_rule_preview_result.html", {"preview": result})
    return _panel(request, access, preview_form=form, preview=result)


def _panel(request: HttpRequest, access: RoomAccess, **extra: Any) -> HttpResponse:
    context = {
        "room": access.room,
        "access": access,
        "can_change": access.membership.role == access.membership.Role.OWNER,
        "rules": [(row, as_rule(row)) for row in ApprovalRule.objects.filter(room=access.room).order_by("pk")],
        "check_form": CheckCommandForm(initial={"check_command": access.room.check_command}),
        "rule_form": ApprovalRuleForm(),
        "preview_form": RulePreviewForm(),
        **extra,
    }
    if request.htmx:
        return render(request, "agents/_room_settings.html", context)
    if request.method == "POST":
        for message in filter(None, (extra.get("settings_notice"),)):
            flash.success(request, message)
        for message in filter(None, (extra.get("settings_error"),)):
            flash.error(request, message)
        if not any(f.errors for f in (extra.get("check_form"), extra.get("rule_form")) if f is not None):
            return redirect("agents:room_settings", slug=access.room.slug)
    return render(request, "agents/room_settings.html", context)
