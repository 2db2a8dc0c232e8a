from __future__ import annotations

from django.urls import path

from agents.views import profiles

app_name = "agents"

urlpatterns = [
    path("agents/", profiles.agent_list, name="list"),
    path("agents/new/", profiles.agent_create, name="create"),
    path("agents/<id:agent_id>/edit/", profiles.agent_edit, name="edit"),
]
