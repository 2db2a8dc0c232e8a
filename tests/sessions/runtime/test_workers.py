"""End to end with real Celery workers (and beat) in subprocesses, real Redis, the test
database, real git and real subprocesses for the tools."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings

from agents.models import AgentProfile
from hub.asgi import application
from rooms.models import Message, RoomAgent
from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create


def wait_for(predicate, timeout: float, what: str, processes=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    logs = "\n".join(p.hub_process.log_tail() if hasattr(p, "hub_process") else p.log_tail() for p in processes)
    raise AssertionError(f"timed out waiting for {what}\n{logs}")


def state_of(session: Session) -> str:
    session.refresh_from_db(fields=["state", "reason"])
    return session.state


def ended(session: Session):
    return state_of(session) in {"succeeded", "failed", "cancelled", "timed_out", "needs_merge"}


def agent_in(room, name: str, replay: str) -> AgentProfile:
    agent = AgentProfile.objects.create(name=name, model=f"replay:{replay}", context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    return agent


def test_a_demo_session_runs_on_a_worker_to_a_verified_merge(hub_workers, person, demo_room, replay_agent,
                                                              allow_demo_tools):
    worker = hub_workers()
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    wait_for(lambda: ended(session), 120, "the session to end", [worker])
    assert session.state == "succeeded", session.reason
    assert "merged" in session.reason
    verify = SessionEvent.objects.get(session=session, kind="verify")
    assert "→ exit 0" in verify.payload["line"]
    # A normal session raises no loop alarm.
    assert not SessionEvent.objects.filter(session=session, kind="loop.suspected").exists()


def test_a_steer_reaches_the_agent_at_the_next_boundary_while_a_long_command_runs(
    hub_workers, person, demo_room
):
    worker, beat = hub_workers(), hub_workers.beat()
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = agent_in(demo_room, "builder", "long-shell.json")
    task = task_create(room=demo_room, actor=person, title="Build", objective="Run the long build")
    session = session_start(task=task, agent=agent, actor=person)
    jobs = Path(settings.JOBS_DIR) / str(session.pk) / "jobs"
    wait_for(lambda: jobs.is_dir() and any(jobs.iterdir()), 60, "the long command to start", [worker])
    started = time.monotonic()

    async def steer():
        communicator = WebsocketCommunicator(application, f"/ws/rooms/{demo_room.slug}/",
                                             headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")])
        communicator.scope["user"] = person
        connected, _ = await communicator.connect()
        assert connected
        await communicator.send_json_to({"type": "hello", "last_seq": 10_000})
        await communicator.send_json_to({"type": "steer", "agent": agent.pk, "text": "Use the fast build profile."})
        await communicator.disconnect()

    async_to_sync(steer)()
    steer_message = wait_for(lambda: Message.objects.filter(room=demo_room, kind="steer").first(), 10, "the steer row")
    delivered = wait_for(
        lambda: Message.objects.filter(pk=steer_message.pk, delivered_at__isnull=False).first(), 30,
        "the steer to be delivered", [worker],
    )
    latency = (delivered.delivered_at - delivered.created_at).total_seconds()
    assert time.monotonic() - started < 20, "the steer waited for the command instead of the next boundary"
    print(f"\nsteer latency (frame persisted → delivered at boundary): {latency * 1000:.0f} ms")
    assert delivered.session_link.session_id == session.pk

    wait_for(lambda: ended(session), 150, "the session to end", [worker, beat])
    assert session.state == "succeeded", session.reason
    results = [e.payload for e in SessionEvent.objects.filter(session=session, kind="tool.result")]
    shell, awaited = results[0], results[1]
    assert shell["tool"] == "shell" and shell["job"]
    assert awaited["tool"] == "await" and "build-finished" in awaited["preview"]
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds.index("input.delivered") < [i for i, k in enumerate(kinds) if k == "tool.result"][1]
    assert "waiting" in [e.payload.get("state") for e in SessionEvent.objects.filter(session=session,
                                                                                    kind="session.state_changed")]
    # The job's result arrived exactly once: through await, not again at a boundary.
    assert "job.finished" not in kinds


def test_a_worker_killed_mid_session_is_resumed_without_running_a_tool_call_twice(hub_workers, person, demo_room):
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = agent_in(demo_room, "counter", "count-once.json")
    first = hub_workers(ATRIUM_SHELL_YIELD_SECONDS="30")
    beat = hub_workers.beat()
    task = task_create(room=demo_room, actor=person, title="Count", objective="Run once")
    session = session_start(task=task, agent=agent, actor=person)
    runs = lambda: Path(session_worktree(session)) / "runs.txt"  # noqa: E731
    wait_for(lambda: session_worktree(session) and runs().exists(), 60, "the command to start", [first])
    os.killpg(first.hub_process.process.pid, signal.SIGKILL)
    first.hub_process.process.wait()
    killed_at = time.monotonic()
    second = hub_workers()
    wait_for(lambda: ended(session), 120, "the resumed session to end", [second, beat])
    print(f"\nworker SIGKILL → resumed and finished in {time.monotonic() - killed_at:.1f} s")
    assert session.state == "succeeded", session.reason
    assert runs().read_text() == "run\n"  # the shell call ran exactly once
    results = [e.payload for e in SessionEvent.objects.filter(session=session, kind="tool.result")]
    assert [r["tool"] for r in results] == ["shell", "await"]
    assert results[0]["unknown"] is True  # reported honestly, not re-run
    claims = SessionEvent.objects.filter(session=session, kind="session.claimed")
    # Claimed by the killed worker's process, then by the new one (once per wake-up).
    assert len({e.payload["worker"].split(":")[1] for e in claims}) == 2


def test_path_escapes_are_refused_and_the_session_goes_on(hub_workers, person, demo_room):
    worker = hub_workers()
    ApprovalRule.objects.create(room=demo_room, tool="write_file", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = agent_in(demo_room, "escaper", "escape.json")
    task = task_create(room=demo_room, actor=person, title="Escape", objective="Try")
    session = session_start(task=task, agent=agent, actor=person)
    wait_for(lambda: ended(session), 90, "the session to end", [worker])
    assert session.state == "succeeded", session.reason
    results = [e.payload for e in SessionEvent.objects.filter(session=session, kind="tool.result")]
    assert len(results) == 3 and all(r["is_error"] for r in results)
    assert "root:" not in "".join(r["preview"] for r in results)
    intent = Path(demo_room.repo_path) / ".atrium" / "tasks" / str(task.pk) / "intent.md"
    assert "new goals" not in intent.read_text()


def session_worktree(session: Session) -> str:
    session.refresh_from_db(fields=["worktree_path"])
    return session.worktree_path
