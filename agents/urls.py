from __future__ import annotations

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.agent_list, name="list"),
    path("new/", views.agent_create, name="create"),
    path("<int:agent_id>/edit/", views.agent_edit, name="edit"),
]
