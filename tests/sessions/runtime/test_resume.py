"""A session whose worker dies is resumed by another worker within seconds, with the
hub's default settings: at once when the dead process is seen gone on this machine,
and after a few missed heartbeats when it cannot be seen (a frozen worker, another
machine). Real workers, beat and jobs in subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.runtime.liveness import lease_owner_gone, worker_id
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import agent_in, ended, wait_for

RESUME_LIMIT_SECONDS = 15


def claims(session: Session) -> list[SessionEvent]:
    return list(SessionEvent.objects.filter(session=session, kind="session.claimed").order_by("seq"))


def _started(session: Session) -> bool:
    session.refresh_from_db(fields=["worktree_path"])
    return bool(session.worktree_path) and Path(session.worktree_path, "runs.txt").exists()


def holder(workers, session: Session):
    """The worker whose pool process holds the session's lease."""
    session.refresh_from_db(fields=["lease_owner"])
    pid = int(session.lease_owner.split(":")[1])
    return next(w for w in workers if os.getpgid(pid) == w.hub_process.process.pid)


@pytest.mark.parametrize("fault", ["killed", "frozen"])
def test_a_session_resumes_within_seconds_after_its_worker_dies(hub_workers, person, demo_room, fault):
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = agent_in(demo_room, "counter", "count-once.json")
    workers = [hub_workers(fast=False), hub_workers(fast=False)]
    beat = hub_workers.beat(fast=False)
    task = task_create(room=demo_room, actor=person, title="Count", objective="Run once")
    session = session_start(task=task, agent=agent, actor=person)
    # Killed while its command runs: the command has started (a worker killed before the
    # job starts leaves a call that is never run again, by design, and nothing to count).
    wait_for(lambda: _started(session), 60, "the first command to start", workers)
    victim = holder(workers, session)
    first_claims = len(claims(session))
    if fault == "killed":
        os.killpg(victim.hub_process.process.pid, signal.SIGKILL)
    else:  # alive but silent: only its missed heartbeats tell
        os.killpg(victim.hub_process.process.pid, signal.SIGSTOP)
    faulted = time.monotonic()
    try:
        wait_for(lambda: len(claims(session)) > first_claims, 60, "another worker to resume", workers + [beat])
        resumed = time.monotonic() - faulted
        print(f"\nworker {fault} → session resumed by another worker in {resumed:.1f} s "
              f"(default settings; limit {RESUME_LIMIT_SECONDS} s)")
        assert resumed <= RESUME_LIMIT_SECONDS
        wait_for(lambda: ended(session), 120, "the session to end", workers + [beat])
    finally:
        os.killpg(victim.hub_process.process.pid, signal.SIGKILL)
    assert session.state == "succeeded", session.reason
    session.refresh_from_db()
    worktree = session.worktree_path
    assert Path(worktree, "runs.txt").read_text() == "run\n"  # no step repeated
    steps = [e.payload["step"] for e in SessionEvent.objects.filter(session=session, kind="model.reply")]
    assert steps == sorted(set(steps))  # no step lost or run twice


def test_a_lease_owner_is_gone_only_when_its_process_on_this_machine_is():
    assert lease_owner_gone(worker_id()) is False  # this very process
    done = subprocess.Popen(["true"])
    done.wait()
    child = done.pid
    host = worker_id().split(":")[0]
    assert lease_owner_gone(f"{host}:{child}:abcd1234") is True
    assert lease_owner_gone(f"elsewhere:{child}:abcd1234") is False  # another machine: heartbeats tell
    assert lease_owner_gone("") is False
