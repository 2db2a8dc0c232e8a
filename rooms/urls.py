from __future__ import annotations

from django.urls import path
from django.views.generic import RedirectView

from rooms import views

app_name = "rooms"

urlpatterns = [
    path("", views.room_list, name="list"),
    path("rooms/", RedirectView.as_view(pattern_name="rooms:list", permanent=True)),  # what people type
    path("rooms/new/", views.room_create, name="create"),
    path("rooms/<slug:slug>/", views.room_detail, name="detail"),
    path("rooms/<slug:slug>/messages/", views.room_messages, name="messages"),
    path("rooms/<slug:slug>/store/", views.room_store, name="store"),
    path("rooms/<slug:slug>/members/", views.member_add, name="member_add"),
    path("rooms/<slug:slug>/members/<id:user_id>/remove/", views.member_remove, name="member_remove"),
]
