"""Issue 28, done when: a session on real workers outlives its PostgreSQL server being
restarted under it (`pg_ctl restart -m fast`, and `-m immediate`: a crash and its
recovery) and its connections being killed, ten times each. The hub runs on a cluster
of the test's own (initdb, a port of its own), so restarting it touches nobody else's
database: the workers, the sweep and beat, the session set up by a `manage.py`
subprocess, and the test watching through psycopg, each reconnecting on its own.
0 sessions failed, 0 commands run twice or lost (the counting agent's runs.txt)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.conftest import (
    PROJECT_ROOT,
    CeleryWorker,
    HubProcess,
    _free_port,
    _wait_until,
    start_hub_process,
)
from tests.session_fixtures import FAST

STEPS = 150  # 62 steps ran during the 30 faults on an idle 2-core machine
FAULTS = ("restart -m fast", "restart -m immediate", "pg_terminate_backend")
EACH = 10
PAUSE_SECONDS = 1.0  # between two faults: the session takes a few steps in between

_PG_BIN = sorted((p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()),
                 key=lambda p: int(p.parent.name))


@dataclass
class Cluster:
    data: Path
    port: int
    bin: Path

    def url(self, database: str = "atrium") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *args: str) -> None:
        _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.data / "server.log"),
                      "-w", "-t", "60", *args])

    def query(self, sql: str, *params) -> list[tuple]:
        """``sql`` on the hub's database, waiting out a server that is restarting."""
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=5, autocommit=True) as db:
                    return db.execute(sql, params).fetchall()
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def _as_postgres(argv: list[str]) -> None:
    """initdb and the server refuse to run as root: as root, run them as `postgres`."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *argv], check=True, capture_output=True, timeout=120)


@pytest.fixture
def cluster():
    # A folder postgres may enter: pytest's own tmp folders are private to root.
    data = Path(tempfile.mkdtemp(prefix="atrium-pg-", dir="/tmp")) / "data"
    if os.geteuid() == 0:
        shutil.chown(data.parent, "postgres")
        os.chmod(data.parent, 0o755)
    own = Cluster(data=data, port=_free_port(), bin=_PG_BIN[-1])
    _as_postgres([str(own.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"])
    own.pg_ctl("start", "-o", f"-p {own.port} -c listen_addresses=127.0.0.1 -k {data.parent} -c fsync=off")
    with psycopg.connect(own.url("postgres"), autocommit=True) as db:
        db.execute("CREATE DATABASE atrium")
    try:
        yield own
    finally:
        own.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(data.parent, ignore_errors=True)


SET_UP = """
import sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from tests.session_fixtures import DEMO_REPO
from tests.sessions.runtime.test_database_faults import counting_agent

call_command("migrate", interactive=False, verbosity=0)
person = get_user_model().objects.create_user("pat", password="pw-pat-12345")
room = room_create(owner=person, name="Restarts", source=TemplateRepository(DEMO_REPO), check_command="")
agent = counting_agent(room, int(sys.argv[1]))
task = task_create(room=room, actor=person, title="Count", objective="Count")
print(session_start(task=task, agent=agent, actor=person).pk)
"""


def _lines(worktree: str | None) -> list[str]:
    path = Path(worktree or "/nonexistent", "runs.txt")
    return path.read_text().split() if path.exists() else []


@pytest.mark.timeout(900)
@pytest.mark.skipif(connection.vendor != "postgresql" or not _PG_BIN or shutil.which("runuser") is None,
                    reason="a PostgreSQL hub, on a cluster of its own")
def test_a_session_outlives_its_database_server_restarted_crashed_and_its_connections_killed(cluster, tmp_path):
    env = {**FAST, "DATABASE_URL": cluster.url(), "ATRIUM_DATA_DIR": str(tmp_path / "data")}
    made = subprocess.run([sys.executable, "-c", SET_UP, str(STEPS)], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DJANGO_SETTINGS_MODULE": "hub.settings", **env})
    assert made.returncode == 0, made.stderr
    session_id = int(made.stdout.split()[-1])
    processes = _start_hub(tmp_path, env)
    try:
        def state() -> tuple[str, str, str | None]:
            return cluster.query("SELECT state, reason, worktree_path FROM agents_session WHERE id = %s",
                                 session_id)[0]

        _wait(lambda: len(_lines(state()[2])) >= 3, 120, "the session to be under way", processes)
        done: dict[str, int] = dict.fromkeys(FAULTS, 0)
        for fault in FAULTS:
            for _ in range(EACH):
                assert state()[0] == "running", (fault, done, state())  # still under way: each fault hits it
                if fault == "pg_terminate_backend":
                    cluster.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE datname = 'atrium' AND pid <> pg_backend_pid()")
                else:
                    cluster.pg_ctl(*fault.split())
                done[fault] += 1
                time.sleep(PAUSE_SECONDS)
        during = len(_lines(state()[2]))
        _wait(lambda: state()[0] not in {"queued", "running"}, 600, "the session to end", processes)
        final, reason, worktree = state()
        assert final == "succeeded", (reason, _logs(processes))
        assert _lines(worktree) == [str(n) for n in range(STEPS)]  # each command once, none lost
        given_back = cluster.query("SELECT count(*) FROM agents_sessionevent WHERE session_id = %s "
                                   "AND kind = 'session.given_back'", session_id)[0][0]
        assert given_back >= 1 and done == dict.fromkeys(FAULTS, EACH), (given_back, done, during)
    finally:
        for process in processes:
            process.stop()


def _start_hub(tmp_path: Path, env: dict[str, str]) -> list[HubProcess]:
    """A session worker, the sweep's worker and beat, as `manage.py start` runs them."""
    from django.conf import settings

    processes = []
    for queue in (settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_SWEEP_QUEUE):
        nodename = f"atrium-restarts-{uuid.uuid4().hex[:8]}@localhost"
        process = start_hub_process(
            f"worker of {queue}",
            [sys.executable, "-m", "celery", "-A", "hub", "worker", "--hostname", nodename, "--queues", queue,
             "--pool", "prefork", "--concurrency", "1", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "--loglevel", "INFO"],
            tmp_path / f"worker-{len(processes)}.log", **env)
        processes.append(process)
        worker = CeleryWorker(hub_process=process, nodename=nodename, queue=queue)
        _wait_until(lambda worker=worker: worker.ping(timeout=0.5), process, "answer a ping")
    processes.append(start_hub_process(
        "celery beat", [sys.executable, "-m", "celery", "-A", "hub", "beat", "--loglevel", "INFO",
                        "--schedule", str(tmp_path / "beat-schedule")], tmp_path / "beat.log", **env))
    return processes


def _wait(predicate, timeout: float, what: str, processes: list[HubProcess]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}\n{_logs(processes)}")


def _logs(processes: list[HubProcess]) -> str:
    return "\n".join(f"--- {p.name}\n{p.log_tail()}" for p in processes)
