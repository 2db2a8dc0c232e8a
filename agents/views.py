"""Agent profile pages: list, create, edit. Profiles are shared by the whole hub;
every signed-in person may create and edit them."""

from __future__ import annotations

from django.contrib import messages as flash
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from agents.forms import AgentProfileForm
from agents.models import AgentProfile


@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = AgentProfile.objects.annotate(room_count=Count("room_agents")).order_by("name")
    return render(request, "agents/list.html", {"agents": agents})


@require_http_methods(["GET", "POST"])
def agent_create(request: HttpRequest) -> HttpResponse:
    form = AgentProfileForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        agent = form.save(commit=False)
        agent.created_by = request.user
        agent.save()
        flash.success(request, f"Agent {agent.name} created.")
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": None})


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(AgentProfile, pk=agent_id)
    form = AgentProfileForm(request.POST or None, instance=agent)
    if request.method == "POST" and form.is_valid():
        form.save()
        flash.success(request, f"Agent {agent.name} saved.")
        return redirect("agents:list")
    return render(request, "agents/form.html", {"form": form, "agent": agent})
