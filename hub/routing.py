from __future__ import annotations

from django.urls import path

from agents.consumers import SessionConsumer
from rooms.consumers import RoomConsumer

websocket_urlpatterns: list = [
    path("ws/rooms/<slug:slug>/", RoomConsumer.as_asgi()),
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
]
