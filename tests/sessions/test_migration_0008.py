"""Migration 0008 copies the decisions of sessions saved before it out of their blob."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from sessions.models import Session, Task
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db

migration = importlib.import_module("agents.migrations.0008_issue15_session_state")


def test_decisions_are_copied_out_of_the_old_whole_state_column():
    owner, agent = make_user("olga"), make_agent("fixer")
    task = Task.objects.create(room=make_room(owner, "Room", agents=[agent]), title="t", objective="o")
    decisions = [{"number": 1, "kind": "steer", "author": "olga", "text": "keep it small", "step": 3}]
    old = Session.objects.create(task=task, agent=agent, attempt=1, gateway_state={"version": 2, "decisions": decisions})
    fresh = Session.objects.create(task=task, agent=agent, attempt=2)
    # As the migration ran: with agents' models as they were at 0008 (the same tables).
    at_0008 = MigrationLoader(connection).project_state(("agents", "0008_issue15_session_state")).apps
    migration.copy_decisions(at_0008, None)
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.decisions == decisions and fresh.decisions == []
