"""Tasks, sessions, their records, gateway keys, evals and room assignments moved out of
agents and observations into the apps they belong to, and a room's message lost its
session column to sessions' SessionMessage. A database with data in it, made by the
schema before the move, migrates forward with nothing lost, and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("agents", "0016_model_call_limits"), ("observations", "0007_gateway_forks"),
    ("rooms", "0004_issue9_room_network"), ("agent_sessions", None), ("endpoint", None), ("evals", None),
]

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(targets):
    """Migrate to ``targets`` (``(app, None)``: none of the app's migrations) and return
    the apps as they are there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    named = {app for app, _ in targets}
    others = [node for node in executor.loader.graph.leaf_nodes() if node[0] not in named]
    return executor.loader.project_state([t for t in targets if t[1] is not None] + others).apps


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _fill(old) -> dict:
    """A room with an agent, a task, a session, a steer bound to it and an agent's post,
    an observation on a blob, a gateway key with a conversation, an eval run: as the old
    apps stored them."""
    User, ContentType = old.get_model("auth", "User"), old.get_model("contenttypes", "ContentType")
    owner = User.objects.create(username="olga")
    room = old.get_model("rooms", "Room").objects.create(name="Payments", slug="payments", owner=owner,
                                                          repo_path="/nowhere")
    agent = old.get_model("agents", "AgentProfile").objects.create(name="fixer", model="replay:x.json")
    old.get_model("agents", "RoomAgent").objects.create(room=room, agent=agent, reviewer=True)
    task = old.get_model("agents", "Task").objects.create(room=room, title="Fix", objective="make it pass")
    session = old.get_model("agents", "Session").objects.create(task=task, agent=agent, attempt=1)
    Message = old.get_model("rooms", "Message")
    steer = Message.objects.create(room=room, seq=1, kind="steer", author=owner, agent=agent, session=session,
                                   text="keep it small")
    chat = Message.objects.create(room=room, seq=2, kind="chat", author=owner, text="hello")
    blob = old.get_model("observations", "Blob").objects.create(sha256="a" * 64, size=5, token_estimate=2,
                                                                data=b"hello")
    old.get_model("observations", "Observation").objects.create(
        room=room, session=session, seq=0, step=1, call_id="c1", tool="read_file", size=5, token_estimate=2,
        blob=blob)
    key = old.get_model("agents", "GatewayKey").objects.create(room=room, agent=agent, prefix="atr_abc",
                                                                digest="d" * 64, created_by=owner)
    old.get_model("agents", "GatewayConversation").objects.create(key=key, conversation="conv", session=session)
    batch = old.get_model("agents", "EvalBatch").objects.create(model="script:", created_by=owner)
    old.get_model("agents", "EvalRun").objects.create(batch=batch, scenario="s", scenario_version="1", scenario_kind="k",
                                                      model="script:", room=room, session=session, state="passed")
    moved, _ = ContentType.objects.get_or_create(app_label="agents", model="session")
    return {"room": room.pk, "session": session.pk, "steer": steer.pk, "chat": chat.pk, "content_type": moved.pk}


def test_a_database_of_the_old_schema_migrates_with_nothing_lost_and_back():
    try:
        ids = _fill(_migrate(BEFORE))
        new = _migrate(_latest())
        Session, SessionMessage = new.get_model("agent_sessions", "Session"), new.get_model("agent_sessions", "SessionMessage")
        session = Session.objects.get(pk=ids["session"])
        assert (session.task.title, session.agent.name, session.task.room.slug) == ("Fix", "fixer", "payments")
        assert list(SessionMessage.objects.values_list("message_id", "session_id")) == [(ids["steer"], ids["session"])]
        assert new.get_model("rooms", "RoomAgent").objects.get(room_id=ids["room"]).reviewer is True
        observation = new.get_model("agent_sessions", "Observation").objects.get(session=session)
        assert bytes(observation.blob.data) == b"hello"
        assert new.get_model("endpoint", "GatewayConversation").objects.get().session_id == ids["session"]
        assert new.get_model("evals", "EvalRun").objects.get().session_id == ids["session"]
        ContentType = new.get_model("contenttypes", "ContentType")
        assert ContentType.objects.get(pk=ids["content_type"]).app_label == "agent_sessions"

        # And back: the session column is filled again from the links.
        old = _migrate(BEFORE)
        Message = old.get_model("rooms", "Message")
        assert Message.objects.get(pk=ids["steer"]).session_id == ids["session"]
        assert Message.objects.get(pk=ids["chat"]).session_id is None
        assert ContentType.objects.get(pk=ids["content_type"]).app_label == "agents"
    finally:
        _migrate(_latest())
