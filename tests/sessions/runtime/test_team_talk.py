"""Agents in one room that see each other's work and talk: room_status and agents'
mentions through the real runtime (the worker's code in this process, PostgreSQL, the
room's git repository) with recorded models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.models import AgentProfile
from agents.tools.room import room_status
from rooms.models import Message, RoomAgent
from rooms.repository.git import git
from rooms.services import message_post
from sessions.event_lines import log_frame
from sessions.ledger.state_store import session_gateway_state
from sessions.models import AgentMention, ApprovalRule, Session, SessionEvent
from sessions.runtime.mentions import render_agent_message
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.room import DatabaseRoomView
from sessions.worker.run import run_session


@pytest.fixture
def room(demo_room):
    demo_room.check_command = ""  # no check: these sessions merge what they wrote
    demo_room.save()
    for tool in ("write_file", "shell"):
        ApprovalRule.objects.create(room=demo_room, tool=tool, decision="allow")
    return demo_room


@pytest.fixture
def recorded(room, settings, tmp_path):
    """``recorded(name, turns)``: an agent of the room playing ``turns`` (replay format)."""
    settings.REPLAYS_DIR = tmp_path / "replays"
    settings.REPLAYS_DIR.mkdir()

    def make(name: str, turns: list[dict]) -> AgentProfile:
        (settings.REPLAYS_DIR / f"{name}.json").write_text(json.dumps({"turns": turns}))
        agent = AgentProfile.objects.create(name=name, model=f"replay:{name}.json", context_window=32_000,
                                            output_budget=2_000)
        RoomAgent.objects.create(room=room, agent=agent)
        return agent

    return make


def start(person, room, agent, title: str) -> Session:
    task = task_create(room=room, actor=person, title=title, objective=title)
    return session_start(task=task, agent=agent, actor=person)


def results(session: Session, tool: str) -> list[str]:
    """What the session's calls of ``tool`` returned, in order (the stored observations)."""
    from sessions.models import Observation

    return [o.blob.data.decode() for o in Observation.objects.filter(session=session, tool=tool).order_by("seq")]


def state(session: Session) -> str:
    return Session.objects.values_list("state", flat=True).get(pk=session.pk)


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


WAIT = call("await", seconds=300)  # parks the session until a message for it arrives


# --- room_status ------------------------------------------------------------------------


def test_room_status_shows_tasks_sessions_files_and_merges_then_only_the_changes(person, room, recorded):
    watcher = recorded("watcher", [call("room_status"), WAIT, call("room_status"), WAIT])
    alice = recorded("alice", [call("write_file", path="mode.py", content="def mode(xs): ...\n"), WAIT])
    carl = recorded("carl", [call("write_file", path="mean.py", content="def mean(xs): ...\n"),
                             {"text": "Done."}])
    watching = start(person, room, watcher, "Watch the room")
    adding = start(person, room, alice, "Add mode")
    meaning = start(person, room, carl, "Add mean")

    run_session(watching.pk)  # looks once, then waits
    assert state(watching) == "waiting"
    first = results(watching, "room_status")[0]
    assert f"you are session {watching.pk}" in first
    assert (f"Open tasks (3):\n- task {watching.task_id} 'Watch the room' (yours)\n- task {adding.task_id} 'Add mode'\n"
            f"- task {meaning.task_id} 'Add mean'") in first
    assert f"- session {adding.pk} (alice on task {adding.task_id} 'Add mode'): queued; no files changed yet" in first
    assert "Merged into main since you started (0):\n- nothing" in first

    run_session(adding.pk)  # writes mode.py in its worktree, then waits
    run_session(meaning.pk)  # writes mean.py and merges it into main
    assert state(adding) == "waiting" and state(meaning) == "succeeded"
    merge = git("log", "-1", "--format=%H %s", "main", cwd=Path(room.repo_path)).strip().split(" ", 1)

    message_post(room=room, author=person, kind="chat", text="@watcher look again")
    run_session(watching.pk)
    second = results(watching, "room_status")[1]
    assert second.startswith("Room status: what changed since your last room_status")
    assert f"- session {adding.pk} (alice on task {adding.task_id} 'Add mode'): queued -> waiting" in second
    assert f"- session {adding.pk} (alice on task {adding.task_id} 'Add mode') also changed: mode.py" in second
    assert f"- ended: session {meaning.pk} (carl on task {meaning.task_id} 'Add mean')" in second
    assert f"- task closed: task {meaning.task_id} 'Add mean'" in second
    assert f"- merged into main: {merge[0][:10]} {merge[1]}: mean.py" in second
    assert "Open tasks (" not in second  # the unchanged rest is not sent again
    assert state(watching) == "waiting"

    # A resumed session (another worker, a new process) finds the notes on its row.
    session = Session.objects.select_related("task__room").get(pk=watching.pk)
    assert session.room_status_notes["call_id"] == "replay-2-0"
    Session.objects.filter(pk=watching.pk).update(lease_owner="w2")
    third = room_status(DatabaseRoomView(session, owner="w2"), call_id="later").text
    assert third.startswith("Room status: nothing changed since your last room_status")
    assert "2 open task(s), 1 other live session(s), 1 merge(s) into main since you started" in third


def test_room_status_reads_files_changed_by_commands_and_not_yet_committed(person, room, recorded):
    watcher = recorded("watcher", [WAIT])
    alice = recorded("alice", [call("shell", command="echo x >> textstats.py && touch notes.txt"), WAIT])
    watching = start(person, room, watcher, "Watch")
    adding = start(person, room, alice, "Edit by shell")
    run_session(watching.pk)
    run_session(adding.pk)
    session = Session.objects.select_related("task__room").get(pk=watching.pk)
    Session.objects.filter(pk=watching.pk).update(lease_owner="w1")
    text = room_status(DatabaseRoomView(session, owner="w1"), call_id="c1").text
    assert f"- session {adding.pk} (alice on task {adding.task_id} 'Edit by shell'): waiting; changed: notes.txt, " \
           "textstats.py" in text


# --- agents talk ------------------------------------------------------------------------


def test_an_agents_mention_reaches_the_other_agents_session_at_its_next_boundary(person, room, recorded):
    alice = recorded("alice", [call("post_message", text="@bob I changed stats.py; @pat FYI"), {"text": "Done."}])
    bob = recorded("bob", [{"text": "Noted."}])
    reviewing = start(person, room, bob, "Review")
    writing = start(person, room, alice, "Write")

    run_session(writing.pk)
    posted = Message.objects.get(room=room, kind="agent", agent=alice)
    assert posted.text == "@bob I changed stats.py; @pat FYI" and posted.session_link.session_id == writing.pk
    note = results(writing, "post_message")[0]
    assert f"@bob (session {reviewing.pk}) reads it at its next step." in note
    assert "@pat is a person in this room: they see it in the chat." in note
    mention = AgentMention.objects.get(message=posted)
    assert (mention.session_id, mention.state, mention.sender_id) == (reviewing.pk, "pending", alice.pk)

    run_session(reviewing.pk)
    delivered = SessionEvent.objects.get(session=reviewing, kind="input.delivered")
    assert delivered.payload == {"message_id": posted.pk, "kind": "agent", "author": "alice"}
    texts = [e["text"] for e in session_gateway_state(reviewing)["entries"]]
    assert render_agent_message("alice", posted.text) in texts
    mention.refresh_from_db()
    assert mention.state == "delivered" and mention.delivered_at is not None
    reviewing.refresh_from_db()
    assert reviewing.decisions == []  # an agent's words are no decision of the task
    assert state(reviewing) == "succeeded"


@pytest.mark.parametrize(("rules", "why"), [
    ({"per_pair": 100, "window_seconds": 600, "per_session": 2}, "took 2 messages from agents (at most 2 per session)"),
    ({"per_pair": 2, "window_seconds": 600, "per_session": 100}, "already reached bob 2 times in the last 10 min"),
])
def test_a_mention_loop_between_two_agents_is_stopped_and_people_see_it(person, room, recorded, settings, rules,
                                                                        why):
    settings.ATRIUM_AGENT_MENTIONS = rules
    alice = recorded("alice", [t for n in range(1, 5) for t in (call("post_message", text=f"@bob ping {n}"), WAIT)])
    bob = recorded("bob", [t for n in range(1, 5) for t in (call("post_message", text=f"@alice pong {n}"), WAIT)])
    pinging = start(person, room, alice, "Ping")
    ponging = start(person, room, bob, "Pong")

    for _ in range(20):  # a worker's turns: whichever session is queued runs
        queued = Session.objects.filter(pk__in=[pinging.pk, ponging.pk], state="queued").order_by("pk").first()
        if queued is None:
            break
        run_session(queued.pk)
    else:
        raise AssertionError("the agents never stopped")

    delivered = AgentMention.objects.filter(session=ponging, state="delivered").count()
    assert delivered == 2
    stopped = AgentMention.objects.get(session=ponging, state="stopped")
    assert stopped.message.text == "@bob ping 3" and why in stopped.reason
    # People see it: in the room, and in the session's log.
    notices = Message.objects.filter(room=room, kind="system", text__startswith="Mention loop stopped")
    assert [m.text for m in notices] == [
        f"Mention loop stopped: alice's message #{stopped.message.seq} was not delivered to bob (session "
        f"{ponging.pk}) because {stopped.reason}. Write to either agent to go on."]
    event = SessionEvent.objects.get(session=ponging, kind="mention.stopped")
    assert event.payload["from"] == "alice" and event.payload["reason"] == stopped.reason
    assert "mention from agent alice stopped</span>: " in log_frame(event)["html"]
    # The sender is told, and the stopped one is never delivered.
    assert "did NOT get it" in results(pinging, "post_message")[2]
    assert state(ponging) == "waiting"
    texts = [e["text"] for e in session_gateway_state(ponging)["entries"]]
    assert not any("ping 3" in t for t in texts) and any("ping 2" in t for t in texts)
