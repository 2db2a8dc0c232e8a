"""The live loop alarm through a real Celery worker: a replayed looping trajectory raises
it while the session runs (the session socket shows it as it happens, the room's pages
are told), and the nudge is in the next request the agent gets."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agents.models import AgentProfile
from hub.asgi import application
from rooms.models import RoomAgent
from sessions.ledger.state_store import session_gateway_state
from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import ended, wait_for

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@pytest.mark.timeout(240)
def test_a_looping_agent_raises_the_alarm_live_and_gets_one_nudge_per_pattern(hub_workers, person,
                                                                              demo_room):
    worker = hub_workers()
    ApprovalRule.objects.create(room=demo_room, tool="*", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = AgentProfile.objects.create(name="looper", model="replay:looping.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")

    async def watch(session_id: int) -> tuple[list[dict], list[dict]]:
        """Session events and room frames, as they arrive, until the session ends."""
        session_socket = WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=ORIGIN)
        room_socket = WebsocketCommunicator(application, f"/ws/rooms/{demo_room.slug}/", headers=ORIGIN)
        session_socket.scope["user"] = room_socket.scope["user"] = person
        for socket in (session_socket, room_socket):
            assert (await socket.connect())[0]
            await socket.send_json_to({"type": "hello", "last_seq": 0})
        events, room_frames = [], []
        try:
            while not any(e["kind"] == "session.state_changed" and e["payload"]["state"] == "succeeded"
                          for e in events):
                frame = await session_socket.receive_json_from(timeout=60)
                if frame["type"] == "event":
                    events.append(frame)
                if frame.get("kind") == "loop.suspected":
                    states_at_alarm.append(await database_sync_to_async(
                        lambda: Session.objects.get(pk=session_id).state)())
            while not room_socket.output_queue.empty() or not room_frames:
                room_frames.append(await room_socket.receive_json_from(timeout=10))
        finally:
            await session_socket.disconnect()
            await room_socket.disconnect()
        return events, room_frames

    session = session_start(task=task, agent=agent, actor=person)
    states_at_alarm: list[str] = []
    events, room_frames = async_to_sync(watch)(session.pk)
    wait_for(lambda: ended(session), 30, "the session to end", [worker])
    assert session.state == "succeeded", session.reason

    alarms = [e for e in events if e["kind"] == "loop.suspected"]
    assert [(a["payload"]["kind"], a["payload"]["subject"], a["payload"]["step"]) for a in alarms] == [
        ("reread", "textstats.py lines 1-21", 3), ("failing_command", "python -m pytest -q", 6)]
    # Live: the first alarm reached the page while the agent was still working.
    assert states_at_alarm[0] == "running"
    assert all("loop suspected" in a["html"] and a["refresh"] for a in alarms)
    assert any(f["type"] == "session.changed" for f in room_frames)

    session.refresh_from_db()
    entries = session_gateway_state(session)["entries"]
    for alarm in alarms:
        nudge = alarm["payload"]["nudge"]
        at = [i for i, e in enumerate(entries) if e["kind"] == "nudge" and e["text"] == nudge]
        assert len(at) == 1, "one nudge per pattern"
        # The agent answered after the nudge: the next request carried it.
        later_steps = [e["step"] for e in entries[at[0] + 1:] if e["kind"] == "assistant"]
        assert later_steps and later_steps[0] == alarm["payload"]["step"] + 1
    assert SessionEvent.objects.filter(session=session, kind="loop.suspected").count() == 2
