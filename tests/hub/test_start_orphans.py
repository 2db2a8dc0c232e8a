"""Issue 28: SIGKILL of `manage.py start`'s supervisor orphaned every child (each in a
session of its own): the session ran on in the orphaned worker, and the next `start`
refused ("A hub already runs on this data folder … stop it first") with nothing left to
stop it with; a port held by another program showed as "up, restarted 3×". Now the
children die with the supervisor, the next `start` comes up (where they could not be made
to die with it, it stops what the killed one left, found by pid and start time), a
second `start` beside a running one names its supervisor, and a taken port is said."""

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

STEPS = 40


def test_a_killed_supervisor_takes_its_children_along_and_start_comes_up_again(tmp_path):
    first = Hub(tmp_path)
    second = None
    try:
        first.wait(first.healthy, 120, "the hub to be healthy")
        session = first.start_counting(STEPS)
        first.wait(lambda: len(first.counted(session)["lines"]) >= 3, 120, "the session to be under way")
        time.sleep(4)  # a sweep or two (every 3 s)
        log = first.log_path.read_text(errors="replace")
        assert "Task sessions.tasks.sweep_sessions[" not in log and "Sending due task" not in log  # issue 30: sweeps buried it
        children = [pid for pid in first.pids().values() if pid]
        assert len(children) == 5  # redis, daphne, worker, sweeper, beat
        os.kill(first.process.pid, signal.SIGKILL)  # the supervisor alone, as an OOM kill does
        first.process.wait()
        deadline = time.monotonic() + 5  # none of that run survives 5 s
        while [pid for pid in children if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in children if _alive(pid)]
        second = Hub(tmp_path)  # the same data folder
        second.wait(second.healthy, 120, "the hub to come up again after its supervisor was killed")
        assert_resumed_to_the_end(second, session)
    finally:
        for hub in (first, second):
            if hub is not None:
                hub._last_pids = hub.pids() if (hub.data / "supervisor.json").exists() else {}
                hub.kill()


def test_where_children_cannot_die_with_it_the_next_start_stops_what_a_killed_supervisor_left(tmp_path):
    old_setpriv = tmp_path / "bin"
    old_setpriv.mkdir()
    (old_setpriv / "setpriv").write_text("#!/bin/sh\nexit 1\n")  # knows no --pdeathsig (util-linux < 2.33)
    (old_setpriv / "setpriv").chmod(0o755)
    path = f"{old_setpriv}:{os.environ['PATH']}"
    first = Hub(tmp_path, PATH=path)
    second = None
    try:
        first.wait(first.healthy, 120, "the hub to be healthy")
        session = first.start_counting(STEPS)
        first.wait(lambda: len(first.counted(session)["lines"]) >= 3, 120, "the session to be under way")
        children = [pid for pid in first.pids().values() if pid]
        first._last_pids = first.pids()
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        time.sleep(2)
        assert all(_alive(pid) for pid in children)  # orphaned: nothing told them
        second = Hub(tmp_path, PATH=path)
        second.wait(second.healthy, 120, "the hub to come up over what the killed one left")
        assert not [pid for pid in children if _alive(pid)]
        assert "stopping what it left: redis (pid" in second.log_path.read_text(errors="replace")
        assert_resumed_to_the_end(second, session)
        # A start beside the running one is refused, naming its supervisor.
        again = subprocess.run([sys.executable, "manage.py", "start", "--no-demo", "--port", "1"], cwd=PROJECT_ROOT,
                               env=second.env, capture_output=True, text=True, timeout=120)
        assert again.returncode != 0
        assert f"its supervisor is pid {second.process.pid}" in again.stderr, again.stderr
        assert "Traceback" not in again.stderr
    finally:
        for hub in (first, second):
            if hub is not None:
                hub._last_pids = {**hub._last_pids, **(hub.pids() if (hub.data / "supervisor.json").exists() else {})}
                hub.kill()


def assert_resumed_to_the_end(hub: Hub, session: int) -> None:
    done = hub.wait(lambda: (s := hub.counted(session))["state"] not in {"queued", "running", "waiting"} and s, 240,
                    "the session to be resumed and end")
    assert done["state"] == "succeeded", done["reason"]
    assert done["lines"] == [str(n) for n in range(STEPS)]  # each command once, none lost


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
