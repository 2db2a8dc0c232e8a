"""Scale-out, shown: the production shape of docker/compose.yaml in one machine. Two
`worker` services (one process each, as `--scale worker=2` runs them) share the run
queue, the `sweeper` service serves beat's sweep on its own queue, and beat runs; all
real processes against the test database (PostgreSQL in CI). Sessions spread over both
workers, and a session whose worker is killed mid-command is finished by the other."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from django.conf import settings

from sessions.models import ApprovalRule, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import agent_in, ended, session_worktree, wait_for


def pool_pids(worker) -> set[int]:
    """The worker's processes (its main process and its prefork pool): its process group."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == worker.hub_process.process.pid:  # the process group
            pids.add(int(stat.parent.name))
    return pids


def claimed_by(session) -> list[int]:
    """The pids of the processes that claimed the session, in order (owner ``host:pid:nonce``)."""
    return [int(e.payload["worker"].split(":")[1])
            for e in SessionEvent.objects.filter(session=session, kind="session.claimed").order_by("seq")]


def test_sessions_spread_over_two_workers_and_one_is_resumed_by_the_other_after_a_kill(
    hub_workers, person, demo_room
):
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    workers = [hub_workers(), hub_workers()]  # both on the run queue, as compose's `worker`
    beat = hub_workers.beat()  # and its worker on the sweep queue, as compose's `sweeper`
    assert workers[0].queue == workers[1].queue == settings.CELERY_TASK_DEFAULT_QUEUE
    pids = [pool_pids(w) for w in workers]
    assert all(pids) and not pids[0] & pids[1]

    # Each session holds a worker for its 2 s command: a free worker takes the next turn.
    builder = agent_in(demo_room, "builder", "short-job.json")
    spread = [session_start(task=task_create(room=demo_room, actor=person, title=f"Build {n}", objective="Build"),
                            agent=builder, actor=person) for n in range(4)]
    wait_for(lambda: all(ended(s) for s in spread), 45, "the four sessions to end", workers + [beat])
    assert [s.state for s in spread] == ["succeeded"] * 4, [s.reason for s in spread]
    ran = [{pid for s in spread for pid in claimed_by(s)} & p for p in pids]
    assert all(ran), f"one worker ran every session: {ran}"

    # A session killed with its worker mid-command is resumed by the other worker.
    counter = agent_in(demo_room, "counter", "count-once.json")
    task = task_create(room=demo_room, actor=person, title="Count", objective="Run once")
    session = session_start(task=task, agent=counter, actor=person)
    runs = lambda: Path(session_worktree(session)) / "runs.txt"  # noqa: E731
    wait_for(lambda: session_worktree(session) and runs().exists(), 30, "the command to start", workers)
    first = claimed_by(session)[0]
    victim, survivor = (0, 1) if first in pids[0] else (1, 0)
    os.killpg(workers[victim].hub_process.process.pid, signal.SIGKILL)
    workers[victim].hub_process.process.wait()
    wait_for(lambda: ended(session), 45, "the session to end on the other worker", [workers[survivor], beat])
    assert session.state == "succeeded", session.reason
    assert claimed_by(session)[-1] in pids[survivor]
    assert runs().read_text() == "run\n"  # the command ran once: reported, not run again
    steps = [e.payload["step"] for e in SessionEvent.objects.filter(session=session, kind="model.reply")]
    assert steps == sorted(set(steps))  # no step lost or run twice
