"""The room's settings panel (``#room-settings``): what runs in the room. Its check
command and network access, its reviewer (review before merge: off unless an owner names
one of the room's agents), its approval rules, and a preview of what the rules do with
a sample call. Every member sees them; only owners change them (the services refuse
anyone else). With htmx every form gets the panel back and the preview gets only its
result back (``#rule-preview-result``); without it, a full page (a redirect after a
change, the page with the form's errors after a refusal).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from rooms.errors import attempt
from rooms.forms import RoomSettingsForm
from rooms.models import RoomAgent
from rooms.selectors import RoomAccess, access_room
from rooms.services import room_settings_update
from sessions.approval_rules import as_rule, room_rules
from sessions.forms import ApprovalRuleForm, RulePreviewForm
from sessions.models import ApprovalRule
from sessions.runtime.rule_preview import preview
from sessions.services import approvals, reviews

REVIEWER_CHANGED = "room-reviewer-changed"  # an HX-Trigger event: the agents panel shows the reviewer


@require_http_methods(["GET", "POST"])
def room_settings(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = RoomSettingsForm(request.POST or None, initial=_settings_initial(access))
    notice = None
    if request.method == "POST" and form.is_valid():
        error = attempt(room_settings_update, room=access.room, actor=request.user, **form.cleaned_data)
        if error:
            form.add_error("check_command", error)
        else:
            notice = "Settings saved. They apply from each session's next command."
            form = RoomSettingsForm(initial=_settings_initial(access))
    return _panel(request, access, settings_form=form, settings_notice=notice)


@require_POST
def rule_create(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    form = ApprovalRuleForm(request.POST)
    notice = None
    if form.is_valid():
        error = attempt(approvals.approval_rule_create, room=access.room, actor=request.user, **form.cleaned_data)
        if error:
            form.add_error(None, error)
        else:
            notice, form = "Rule added; running sessions apply it from their next tool call.", ApprovalRuleForm()
    return _panel(request, access, rule_form=form, settings_notice=notice)


@require_POST
def rule_delete(request: HttpRequest, slug: str, rule_id: int) -> HttpResponse:
    access = access_room(request.user, slug)
    error = attempt(approvals.approval_rule_delete, room=access.room, actor=request.user, rule_id=rule_id)
    return _panel(request, access, settings_notice=None if error else "Rule removed.", settings_error=error)


@require_POST
def reviewer_set(request: HttpRequest, slug: str) -> HttpResponse:
    """An owner names the room's reviewer, or turns review off (an empty choice)."""
    access = access_room(request.user, slug)
    chosen = request.POST.get("agent", "")
    if chosen and not chosen.isdigit():
        return _panel(request, access, settings_error="Choose one of the room's agents, or none.")
    agent_id = int(chosen) if chosen else None
    error = attempt(reviews.room_reviewer_set, room=access.room, actor=request.user, agent_id=agent_id)
    notice = None if error else ("Review is on: finished work merges after the reviewer approves it." if agent_id
                                 else "Review is off: finished work merges after the check.")
    response = _panel(request, access, settings_notice=notice, settings_error=error)
    if request.htmx and not error:
        response["HX-Trigger"] = REVIEWER_CHANGED
    return response


@require_GET
def rule_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """What the room's rules would decide for a sample call (read-only, for anyone in the room)."""
    access = access_room(request.user, slug)
    form = RulePreviewForm(request.GET or None)
    result = None
    if form.is_valid():
        result = preview(form.cleaned_data["tool"], form.cleaned_data["sample"], room_rules(access.room.pk))
    if request.htmx:
        return render(request, "sessions/_rule_preview_result.html", {"preview": result})
    return _panel(request, access, preview_form=form, preview=result)


def _settings_initial(access: RoomAccess) -> dict[str, Any]:
    room = access.room
    room.refresh_from_db(fields=["check_command", "allow_network"])
    return {"check_command": room.check_command, "allow_network": room.allow_network}


def _panel(request: HttpRequest, access: RoomAccess, **extra: Any) -> HttpResponse:
    context = {
        "room": access.room,
        "access": access,
        "can_configure": access.can_configure,
        "room_agents": RoomAgent.objects.filter(room=access.room).select_related("agent").order_by("agent__name"),
        "reviewer": reviews.room_reviewer(access.room.pk),
        "rules": [(row, as_rule(row)) for row in ApprovalRule.objects.filter(room=access.room).order_by("pk")],
        "settings_form": RoomSettingsForm(initial=_settings_initial(access)),
        "rule_form": ApprovalRuleForm(),
        "preview_form": RulePreviewForm(),
        **extra,
    }
    if request.htmx:
        return render(request, "sessions/_room_settings.html", context)
    if request.method == "POST":
        if extra.get("settings_notice"):
            flash.success(request, extra["settings_notice"])
        if extra.get("settings_error"):
            flash.error(request, extra["settings_error"])
        if not any(form.errors for form in (extra.get("settings_form"), extra.get("rule_form")) if form is not None):
            return redirect("sessions:room_settings", slug=access.room.slug)
    return render(request, "sessions/room_settings.html", context)
