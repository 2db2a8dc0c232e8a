"""Ctrl-C stops the README's test command: the run, its xdist workers and what they
started (a Celery worker, the embedded Redis) end within seconds, as a person at a
terminal expects (SIGINT to the foreground process group). It used to go on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from hub.pytest_plugin import SET_HERE
from tests.conftest import process_alive as _alive

ROOT = Path(__file__).resolve().parents[1]
STOP_SECONDS = 60


def _redis_of(family: set[int]) -> list[int]:
    """The embedded Redis servers among ``family``."""
    found = []
    for pid in family:
        try:
            if b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def _family(pid: int) -> set[int]:
    """``pid`` and every process below it."""
    family, changed = {pid}, True
    while changed:
        changed = False
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in family:
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if parent in family:
                    family.add(int(entry.name))
                    changed = True
    return family


@pytest.mark.timeout(240)
def test_ctrl_c_stops_the_run_its_workers_and_what_they_started(tmp_path):
    ready = tmp_path / "ready"
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("PYTEST_") and name not in os.environ.get(SET_HERE, "").split(",") and name != SET_HERE}
    env["ATRIUM_INTERRUPT_READY"] = str(ready)
    # On real servers: a database, queue and channel prefix apart from this run's own.
    if env.get("DATABASE_URL"):
        parts = urlsplit(env["DATABASE_URL"])
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"{parts.path}_interrupt"))
    for name in ("CELERY_QUEUE", "CHANNELS_PREFIX"):
        env[name] = f"{env.get(name) or 'atrium'}-interrupt"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q",
                            "tests/sessions/interrupt_target.py"], cwd=ROOT, env=env, start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() or not ready.read_text():
            assert run.poll() is None, run.stdout.read().decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the run's worker did not come up"
            time.sleep(0.2)
        celery = int(ready.read_text())
        family = _family(run.pid)
        redis = _redis_of(family)
        assert celery in family and (redis or env.get("REDIS_URL"))  # an embedded Redis unless a real one is named
        os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        run.wait(timeout=STOP_SECONDS)
        time.sleep(1)  # the kernel's parent-death signal reaches Redis
        assert not [pid for pid in family if _alive(pid)]
        assert not [pid for pid in redis if _alive(pid)]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        for pid in family - {run.pid}:  # what a failed run left: its Celery workers and Redis have sessions of their own
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"celery" in command or b"redis-server" in command:
                    os.kill(pid, signal.SIGKILL)
