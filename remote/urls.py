"""The git remote at ``rooms/<slug>.git`` (what ``git clone`` is given) and the profile
page where people make their access tokens."""

from __future__ import annotations

from django.urls import path

from remote import views

app_name = "remote"

urlpatterns = [
    path("rooms/<slug:slug>.git/atrium/<str:step>", views.worker_step, name="worker_step"),
    path("rooms/<slug:slug>.git/<path:path>", views.git_http, name="git"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/new/", views.token_new, name="token_new"),
    path("profile/tokens/<id:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
