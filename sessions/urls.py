from __future__ import annotations

from django.urls import path

from sessions.views import analysis, changes, ledger, proposal, room_settings, session, tasks

app_name = "sessions"

urlpatterns = [
    path("agents/<id:agent_id>/", analysis.agent_detail, name="agent_detail"),
    path("rooms/<slug:slug>/tasks/", tasks.room_tasks, name="room_tasks"),
    path("rooms/<slug:slug>/team/", tasks.room_team, name="room_team"),
    path("rooms/<slug:slug>/tasks/new/", tasks.task_create, name="task_create"),
    path("rooms/<slug:slug>/totals/", analysis.room_totals, name="room_totals"),
    path("rooms/<slug:slug>/store/", analysis.room_store, name="room_store"),
    path("rooms/<slug:slug>/settings/", room_settings.room_settings, name="room_settings"),
    path("rooms/<slug:slug>/settings/rules/", room_settings.rule_create, name="rule_create"),
    path("rooms/<slug:slug>/settings/reviewer/", room_settings.reviewer_set, name="reviewer_set"),
    path("rooms/<slug:slug>/settings/rules/<id:rule_id>/remove/", room_settings.rule_delete, name="rule_delete"),
    path("rooms/<slug:slug>/settings/preview/", room_settings.rule_preview, name="rule_preview"),
    path("tasks/<id:task_id>/intent/", tasks.task_intent, name="task_intent"),
    path("tasks/<id:task_id>/start/", tasks.task_start, name="task_start"),
    path("sessions/<id:session_id>/", session.session_detail, name="session"),
    path("sessions/<id:session_id>/status/", session.session_status, name="session_status"),
    path("sessions/<id:session_id>/insights/", analysis.session_insights, name="session_insights"),
    path("sessions/<id:session_id>/transcript.md", analysis.session_transcript, name="session_transcript"),
    path("sessions/<id:session_id>/changes/", changes.session_changes, name="session_changes"),
    path("sessions/<id:session_id>/changes.patch", changes.session_patch, name="session_patch"),
    path("sessions/<id:session_id>/proposal/", proposal.proposal_refresh, name="proposal_refresh"),
    path("sessions/<id:session_id>/steer/", session.session_steer, name="session_steer"),
    path("sessions/<id:session_id>/cancel/", session.session_cancel, name="session_cancel"),
    path("sessions/<id:session_id>/segment/", session.session_new_segment, name="session_new_segment"),
    path("sessions/<id:session_id>/retry/", session.session_retry, name="session_retry"),
    path("sessions/<id:session_id>/ledger/", ledger.ledger, name="ledger"),
    path("sessions/<id:session_id>/ledger/<id:seq>/", ledger.observation_text, name="observation"),
    path("sessions/<id:session_id>/approvals/<id:approval_id>/", session.approval_decide, name="approval_decide"),
    path("sessions/<id:session_id>/reviews/<id:review_id>/", session.review_override, name="review_override"),
]
