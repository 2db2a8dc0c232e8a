"""Issue 28: SIGKILL of `manage.py start`'s supervisor orphaned every child (each in a
session of its own): the session ran on in the orphaned worker, and the next `start`
refused ("A hub already runs on this data folder … stop it first") with nothing left to
stop it with; a port held by another program showed as "up, restarted 3×". Now the
children die with the supervisor, the next `start` comes up, and a taken port is said."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from tests.conftest import PROJECT_ROOT
from tests.conftest import process_alive as _alive
from tests.hub.test_start_faults import Hub


def test_a_killed_supervisor_takes_its_children_along_and_start_comes_up_again(tmp_path):
    first = Hub(tmp_path)
    second = None
    try:
        first.wait(first.healthy, 120, "the hub to be healthy")
        time.sleep(4)  # a sweep or two (every 3 s)
        log = first.log_path.read_text(errors="replace")
        assert "Task agents.tasks.sweep_sessions[" not in log and "Sending due task" not in log  # issue 30: sweeps buried it
        children = [pid for pid in first.pids().values() if pid]
        assert len(children) == 5  # redis, daphne, worker, sweeper, beat
        os.kill(first.process.pid, signal.SIGKILL)  # the supervisor alone, as an OOM kill does
        first.process.wait()
        deadline = time.monotonic() + 15
        while [pid for pid in children if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in children if _alive(pid)]
        second = Hub(tmp_path)  # the same data folder
        second.wait(second.healthy, 120, "the hub to come up again after its supervisor was killed")
    finally:
        for hub in (first, second):
            if hub is not None:
                hub._last_pids = hub.pids() if (hub.data / "supervisor.json").exists() else {}
                hub.kill()


def test_start_on_a_port_another_program_holds_says_so_and_starts_nothing(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        env.update(ATRIUM_DATA_DIR=str(tmp_path / "data"), DEBUG="true", ALLOWED_HOSTS="127.0.0.1")
        done = subprocess.run([sys.executable, "manage.py", "start", "--no-demo", "--port", str(port)],
                              cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"127.0.0.1:{port} is already in use" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "supervisor.json").exists()
