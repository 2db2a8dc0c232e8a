"""Issue 32, point 4: a session reads its task's intent from the task's row, the same on
every machine; the committed intent file is rendered from that row, and a copy of the
file that says something else (a checkout elsewhere, or behind) changes nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from django.conf import settings

from observations.blobs import blob_texts
from rooms.repository.intent import intent_read, intent_relpath
from sessions.models import Session, SessionEvent, Task
from sessions.services.lifecycle import session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create, task_intent_now, task_update_intent
from tests.sessions.runtime.test_workers import agent_in, ended, state_of, wait_for


def test_the_row_and_the_committed_file_say_the_same_intent(person, demo_room):
    task = task_create(room=demo_room, actor=person, title="Median", objective="Fix median()")
    assert task_intent_now(task.pk) == intent_read(repo_path=demo_room.repo_path, task_id=task.pk)
    assert "Fix median()" in task_intent_now(task.pk)
    task_update_intent(task=task, actor=person, objective="Fix median() and mean()", definition_of_done="green",
                       prerequisites="", constraints="  keep the tests as they are ")
    assert task_intent_now(task.pk) == intent_read(repo_path=demo_room.repo_path, task_id=task.pk)
    assert "  keep the tests as they are " in task_intent_now(task.pk)  # a person's words, as typed
    Task.objects.filter(pk=task.pk).delete()
    assert task_intent_now(task.pk) is None


def test_a_session_reads_its_intent_from_the_row_not_from_a_copy_of_the_file(hub_workers, person, demo_room):
    worker = hub_workers()
    demo_room.check_command = ""
    demo_room.save()
    recording = f"intent-{uuid.uuid4().hex[:8]}.json"
    replay = Path(settings.REPLAYS_DIR) / recording
    replay.write_text(json.dumps({"turns": [
        {"text": "Waiting for word.", "tool_calls": [{"name": "await", "arguments": {"seconds": 600}}]},
        {"text": "Done."},
    ]}))
    try:
        agent = agent_in(demo_room, "reader", recording)
        agent.record_requests = True
        agent.save()
        task = task_create(room=demo_room, actor=person, title="Median", objective="Objective A")
        session = session_start(task=task, agent=agent, actor=person)
        wait_for(lambda: state_of(session) == "waiting", 60, "the session to wait", [worker])
        # The row changes where the file is not written (as on a machine without this
        # checkout), and this checkout's copy is made to say something else again.
        Task.objects.filter(pk=task.pk).update(objective="Objective B")
        (Path(demo_room.repo_path) / intent_relpath(task.pk)).write_text("Objective: from a stale copy\n")
        session_steer(session=session, actor=person, text="Go on.")
        wait_for(lambda: ended(session), 90, "the session to end", [worker])
    finally:
        replay.unlink()
    assert Session.objects.get(pk=session.pk).state == "succeeded"
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert "intent.changed" in kinds and "intent.drift" not in kinds
    shas = set(session.provider_calls.values_list("request_sha256", flat=True))
    requests = "".join(blob_texts(shas).values())
    assert len(shas) == 2
    assert "Objective B" in requests and "from a stale copy" not in requests
