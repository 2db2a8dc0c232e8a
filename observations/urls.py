from __future__ import annotations

from django.urls import path

from observations import views

app_name = "observations"

urlpatterns = [
    path("sessions/<id:session_id>/ledger/", views.ledger, name="ledger"),
    path("sessions/<id:session_id>/ledger/<id:seq>/", views.observation_text, name="observation"),
]
