from __future__ import annotations

from django.urls import path

from evals import views

app_name = "evals"

urlpatterns = [
    path("evals/", views.eval_list, name="evals"),
    path("evals/runs/<id:run_id>/", views.eval_run, name="eval_run"),
    path("rooms/<slug:slug>/evals/", views.room_evals, name="room_evals"),
]
