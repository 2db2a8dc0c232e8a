from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from hub import pages, views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The gateway endpoint (endpoint/): the key names the room, or the URL does too.
    path("v1/", include("endpoint.urls")),
    path("rooms/<slug:slug>/v1/", include("endpoint.urls")),
    path("", include("rooms.urls")),  # rooms/new/ before the room page's rooms/<slug>/
    path("", pages.room_list, name="room_list"),
    path("rooms/", RedirectView.as_view(pattern_name="room_list", permanent=True)),  # what people type
    path("rooms/<slug:slug>/", pages.room_page, name="room"),
    path("", include("agents.urls")),
    path("", include("sessions.urls")),
    path("", include("endpoint.page_urls")),
    path("", include("evals.urls")),
    path("", include("remote.urls")),
]

handler500 = "hub.views.server_error"
