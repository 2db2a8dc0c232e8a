from __future__ import annotations

from django.urls import path

from rooms.consumers import RoomConsumer

websocket_urlpatterns: list = [
    path("ws/rooms/<slug:slug>/", RoomConsumer.as_asgi()),
]
