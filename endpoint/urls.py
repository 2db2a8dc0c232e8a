"""The endpoint's paths, included by hub.urls at ``v1/`` and ``rooms/<slug>/v1/``.
No trailing slashes: the SDKs append ``/chat/completions``, ``/messages``,
``/messages/count_tokens``, ``/responses`` and ``/models`` to their base URL as written."""

from __future__ import annotations

from django.urls import path, re_path

from endpoint.views import api as views

urlpatterns = [
    path("models", views.models),
    path("chat/completions", views.chat_completions),
    path("messages", views.messages),
    path("messages/count_tokens", views.count_tokens),
    path("responses", views.responses),
    re_path(r"", views.not_found),  # an SDK's other paths: a 404 it can read, not a page
]
