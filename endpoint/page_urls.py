"""The room's keys panel (pages for people); the model API is ``endpoint.urls``."""

from __future__ import annotations

from django.urls import path

from endpoint.views import key_pages

app_name = "endpoint"

urlpatterns = [
    path("rooms/<slug:slug>/gateway-keys/", key_pages.gateway_keys, name="gateway_keys"),
    path("rooms/<slug:slug>/gateway-keys/new/", key_pages.gateway_key_new, name="gateway_key_new"),
    path("rooms/<slug:slug>/gateway-keys/<id:key_id>/revoke/", key_pages.gateway_key_revoke_view,
         name="gateway_key_revoke"),
]
