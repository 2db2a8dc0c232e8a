from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from hub import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The gateway endpoint (agents/endpoint/): the key names the room, or the URL does too.
    path("v1/", include("agents.endpoint.urls")),
    path("rooms/<slug:slug>/v1/", include("agents.endpoint.urls")),
    path("", include("agents.urls")),
    path("", include("rooms.urls")),
]

handler500 = "hub.views.server_error"
