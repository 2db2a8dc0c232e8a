from __future__ import annotations

from django.urls import path

from agents import room_agents, room_settings, views, views_analysis, views_ledger
from agents.endpoint import panel as gateway_keys
from agents.evals import views as eval_views

app_name = "agents"

urlpatterns = [
    path("agents/", views.agent_list, name="list"),
    path("agents/new/", views.agent_create, name="create"),
    path("agents/<id:agent_id>/", views_analysis.agent_detail, name="detail"),
    path("agents/<id:agent_id>/edit/", views.agent_edit, name="edit"),
    path("evals/", eval_views.eval_list, name="evals"),
    path("evals/runs/<id:run_id>/", eval_views.eval_run, name="eval_run"),
    path("rooms/<slug:slug>/evals/", eval_views.room_evals, name="room_evals"),
    path("rooms/<slug:slug>/agents/", room_agents.agent_assign, name="agent_assign"),
    path("rooms/<slug:slug>/assigned/", room_agents.agents_panel, name="agents_panel"),
    path("rooms/<slug:slug>/agents/<id:agent_id>/remove/", room_agents.agent_unassign, name="agent_unassign"),
    path("rooms/<slug:slug>/tasks/", views.room_tasks, name="room_tasks"),
    path("rooms/<slug:slug>/team/", views.room_team, name="room_team"),
    path("rooms/<slug:slug>/tasks/new/", views.task_create, name="task_create"),
    path("rooms/<slug:slug>/totals/", views_analysis.room_totals, name="room_totals"),
    path("rooms/<slug:slug>/settings/", room_settings.room_settings, name="room_settings"),
    path("rooms/<slug:slug>/settings/rules/", room_settings.rule_create, name="rule_create"),
    path("rooms/<slug:slug>/settings/reviewer/", room_settings.reviewer_set, name="reviewer_set"),
    path("rooms/<slug:slug>/settings/rules/<id:rule_id>/remove/", room_settings.rule_delete, name="rule_delete"),
    path("rooms/<slug:slug>/settings/preview/", room_settings.rule_preview, name="rule_preview"),
    path("rooms/<slug:slug>/gateway-keys/", gateway_keys.gateway_keys, name="gateway_keys"),
    path("rooms/<slug:slug>/gateway-keys/new/", gateway_keys.gateway_key_new, name="gateway_key_new"),
    path("rooms/<slug:slug>/gateway-keys/<id:key_id>/revoke/", gateway_keys.gateway_key_revoke_view,
         name="gateway_key_revoke"),
    path("tasks/<id:task_id>/intent/", views.task_intent, name="task_intent"),
    path("tasks/<id:task_id>/start/", views.task_start, name="task_start"),
    path("sessions/<id:session_id>/", views.session_detail, name="session"),
    path("sessions/<id:session_id>/status/", views.session_status, name="session_status"),
    path("sessions/<id:session_id>/insights/", views_analysis.session_insights, name="session_insights"),
    path("sessions/<id:session_id>/transcript.md", views_analysis.session_transcript, name="session_transcript"),
    path("sessions/<id:session_id>/steer/", views.session_steer, name="session_steer"),
    path("sessions/<id:session_id>/cancel/", views.session_cancel, name="session_cancel"),
    path("sessions/<id:session_id>/segment/", views.session_new_segment, name="session_new_segment"),
    path("sessions/<id:session_id>/retry/", views.session_retry, name="session_retry"),
    path("sessions/<id:session_id>/ledger/", views_ledger.ledger, name="ledger"),
    path("sessions/<id:session_id>/ledger/<id:seq>/", views_ledger.observation_text, name="observation"),
    path("sessions/<id:session_id>/approvals/<id:approval_id>/", views.approval_decide, name="approval_decide"),
    path("sessions/<id:session_id>/reviews/<id:review_id>/", views.review_override, name="review_override"),
]
