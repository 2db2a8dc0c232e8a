from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from rooms.consumers import RoomConsumer
from sessions.consumers import SessionConsumer


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other path (an id out of range included): the handshake is refused, cleanly."""

    async def connect(self) -> None:
        await self.close()


websocket_urlpatterns: list = [
    path("ws/rooms/<slug:slug>/", RoomConsumer.as_asgi()),
    path("ws/sessions/<id:session_id>/", SessionConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
