"""Agent profiles: every signed-in person may create one and use anyone's in their rooms;
only its creator, or staff, may change it. Thin: load, call one service, render."""

from __future__ import annotations

from django.contrib import messages as flash
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from agents import selectors, services
from agents.forms import AgentProfileForm
from agents.models import AgentProfile


@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = AgentProfile.objects.annotate(room_count=Count("room_agents")).select_related("created_by")
    rows = [(agent, selectors.can_edit_profile(request.user, agent)) for agent in agents.order_by("name")]
    return render(request, "agents/list.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
def agent_create(request: HttpRequest) -> HttpResponse:
    form = AgentProfileForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        agent = services.agent_profile_save(profile=form.save(commit=False), actor=request.user)
        flash.success(request, f"Agent {agent.name} created.")
        _warn_specs(request, form.instance)
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": None})


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = selectors.access_profile_for_edit(request.user, agent_id)
    form = AgentProfileForm(request.POST or None, instance=agent)
    if request.method == "POST" and form.is_valid():
        # A 403 (PermissionDenied) if ownership changed since the page was loaded.
        services.agent_profile_save(profile=form.save(commit=False), actor=request.user)
        flash.success(request, f"Agent {agent.name} saved.")
        _warn_specs(request, form.instance)
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": agent})


def _warn_specs(request: HttpRequest, agent: AgentProfile) -> None:
    """Saved, but not usable yet (e.g. no API key): say so now, not as a failed session later."""
    for warning in getattr(agent, "spec_warnings", ()):
        flash.warning(request, f"{agent.name}: {warning}")
