from __future__ import annotations

from django.urls import path

from rooms.views import agents, code, rooms, upstream

app_name = "rooms"

urlpatterns = [
    path("rooms/new/", rooms.room_create, name="create"),
    path("rooms/<slug:slug>/code/", code.room_code, name="code"),
    path("rooms/<slug:slug>/upstream/fetch/", upstream.upstream_fetch, name="upstream_fetch"),
    path("rooms/<slug:slug>/messages/", rooms.room_messages, name="messages"),
    path("rooms/<slug:slug>/members/", rooms.member_add, name="member_add"),
    path("rooms/<slug:slug>/members/<id:user_id>/remove/", rooms.member_remove, name="member_remove"),
    path("rooms/<slug:slug>/agents/", agents.agent_assign, name="agent_assign"),
    path("rooms/<slug:slug>/assigned/", agents.agents_panel, name="agents_panel"),
    path("rooms/<slug:slug>/agents/<id:agent_id>/remove/", agents.agent_unassign, name="agent_unassign"),
]
