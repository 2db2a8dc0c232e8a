"""`manage.py start` under faults, through the real processes on the embedded defaults
(SQLite and the embedded Redis in a fresh data folder): Daphne, the Celery main
process, a Celery pool process and the embedded Redis are each SIGKILLed while a
session runs and a page's socket is connected. Each comes back by itself (/healthz
says so), the socket resynchronises by seq and holds every event exactly once, the
session finishes with no step lost or repeated, and Ctrl-C still stops everything.
The recovery times are printed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from websockets.sync.client import connect

from tests.conftest import PROJECT_ROOT, _free_port

STEPS = 24
RECOVERY_LIMIT_SECONDS = 60

SETUP = """
import json
from pathlib import Path
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from agents.models import AgentProfile
from sessions.models import ApprovalRule
from rooms.models import RoomAgent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
user = get_user_model().objects.create_user("faults")
room = room_create(owner=user, name="Faults", source=TemplateRepository(Path("hub/demo_repo")), check_command="")
ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
agent = AgentProfile.objects.create(name="stepper", model="replay:long-session.json", context_window=32000, output_budget=2000)
RoomAgent.objects.create(room=room, agent=agent)
store = SessionStore()
store.update({"_auth_user_id": str(user.pk), "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
              "_auth_user_hash": user.get_session_auth_hash()})
store.create()
task = task_create(room=room, actor=user, title="Steps", objective="Run every step once")
session = session_start(task=task, agent=agent, actor=user)
print("SETUP" + json.dumps({"cookie": store.session_key, "session": session.pk}))
"""

RESULT = """
import json
from pathlib import Path
from sessions.models import Session
s = Session.objects.get(pk={session})
steps = Path(s.worktree_path, "steps.txt")
print("RESULT" + json.dumps({{"state": s.state, "reason": s.reason, "last_seq": s.last_event_seq,
                              "steps": steps.read_text() if steps.exists() else ""}}))
"""

# A counting session (tests.sessions.runtime.test_database_faults.counting_agent) in a hub
# of `start`, and where it stands.
COUNTING = """
import json
from pathlib import Path
from django.contrib.auth import get_user_model
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from tests.sessions.runtime.test_database_faults import counting_agent
user = get_user_model().objects.create_user("counter")
room = room_create(owner=user, name="Counting", source=TemplateRepository(Path("hub/demo_repo")), check_command="")
agent = counting_agent(room, {steps})
task = task_create(room=room, actor=user, title="Count", objective="Count")
print("COUNTING" + json.dumps({{"session": session_start(task=task, agent=agent, actor=user).pk}}))
"""

COUNTED = """
import json
from pathlib import Path
from sessions.models import Session
s = Session.objects.get(pk={session})
runs = Path(s.worktree_path or "/nonexistent", "runs.txt")
print("COUNTED" + json.dumps({{"state": s.state, "reason": s.reason,
                              "lines": runs.read_text().split() if runs.exists() else []}}))
"""


class Hub:
    """`manage.py start` in a subprocess, with its own data folder."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.port = _free_port()
        self.data = tmp_path / "data"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "CHANNELS_PREFIX"}}
        self.env.update(ATRIUM_DATA_DIR=str(self.data), DEBUG="true", ALLOWED_HOSTS="127.0.0.1",
                        PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="hub.settings", **env)
        self.log_path = tmp_path / "start.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "start", "--no-demo", "--port", str(self.port)], cwd=PROJECT_ROOT,
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, script: str, marker: str) -> dict:
        done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=PROJECT_ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120)
        line = next((line for line in done.stdout.splitlines() if line.startswith(marker)), None)
        assert line, done.stdout + done.stderr
        return json.loads(line.removeprefix(marker))

    def start_counting(self, steps: int) -> int:
        return self.manage(COUNTING.format(steps=steps), "COUNTING")["session"]

    def counted(self, session: int) -> dict:
        return self.manage(COUNTED.format(session=session), "COUNTED")

    def health(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            return json.load(error)
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            return None

    def healthy(self) -> bool:
        body = self.health()
        return body is not None and body["status"] == "ok" and "supervisor" in body["checks"]

    def pids(self) -> dict[str, int | None]:
        report = json.loads((self.data / "supervisor.json").read_text())
        return {child["name"]: child["pid"] for child in report["children"]}

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def wait(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"manage.py start exited ({self.process.returncode}):\n{self.log_tail()}")
            if value := predicate():
                return value
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}\n{self.health()}\n{self.log_tail()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in self._last_pids.values():
            if pid:
                with _suppress():
                    os.killpg(pid, signal.SIGKILL)

    _last_pids: dict = {}


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], (ProcessLookupError, PermissionError))


class Watcher(threading.Thread):
    """A page's session socket: reconnects with its last seq, like hub/seqstream.js,
    and records every event frame it is sent (no client-side de-duplication)."""

    def __init__(self, url: str, cookie: str) -> None:
        super().__init__(daemon=True)
        self.url, self.headers = url, {"Cookie": f"sessionid={cookie}", "Origin": url.split("/ws/")[0]
                                       .replace("ws://", "http://")}
        self.seqs: list[int] = []
        self.connects = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                with connect(self.url, additional_headers=self.headers, open_timeout=5) as ws:
                    ws.send(json.dumps({"type": "hello", "last_seq": self.seqs[-1] if self.seqs else 0}))
                    self.connects += 1
                    while not self.halt.is_set():
                        try:
                            frame = json.loads(ws.recv(timeout=0.5))
                        except TimeoutError:
                            continue
                        if frame["type"] == "event":
                            self.seqs.append(frame["seq"])
            except Exception:  # refused, reset, closed: the page retries
                pass
            self.halt.wait(0.5)


def pool_process(worker_pid: int) -> int | None:
    children = psutil.Process(worker_pid).children()
    return children[0].pid if children else None


@pytest.mark.timeout(600)
def test_every_process_comes_back_and_nothing_is_lost_or_repeated(tmp_path):
    hub = Hub(tmp_path)
    watcher = None
    try:
        hub.wait(hub.healthy, 120, "the hub to come up healthy")
        setup = hub.manage(SETUP, "SETUP")
        watcher = Watcher(f"ws://127.0.0.1:{hub.port}/ws/sessions/{setup['session']}/", setup["cookie"])
        watcher.start()
        hub.wait(lambda: len(watcher.seqs) >= 6, 60, "the session to get going")

        recoveries: dict[str, float] = {}
        faults = {
            "daphne": lambda pids: pids["daphne"],
            "celery main process": lambda pids: pids["worker"],
            "celery pool process": lambda pids: pool_process(pids["worker"]),
            "embedded redis": lambda pids: pids["redis"],
        }
        for fault, victim in faults.items():
            before = hub.pids()
            hub._last_pids = before
            pid = victim(before)
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            if fault != "celery pool process":  # the supervisor replaces it (Celery replaces a pool process)
                name = {"daphne": "daphne", "celery main process": "worker", "embedded redis": "redis"}[fault]
                hub.wait(lambda name=name, before=before: hub.pids()[name] not in (None, before[name]),
                         RECOVERY_LIMIT_SECONDS,
                         f"{name} to be restarted")
            else:
                hub.wait(lambda before=before, pid=pid: pool_process(before["worker"]) not in (None, pid),
                         RECOVERY_LIMIT_SECONDS,
                         "a new pool process")
            time.sleep(0.5)  # let the exit show up in what is checked next
            hub.wait(hub.healthy, RECOVERY_LIMIT_SECONDS, f"/healthz to be ok after killing {fault}")
            recoveries[fault] = time.monotonic() - killed

        result = hub.wait(lambda: (r := hub.manage(RESULT.format(session=setup["session"]), "RESULT"))
                          and r["state"] not in ("queued", "running", "waiting") and r, 240, "the session to end")
        hub.wait(lambda: watcher.seqs and watcher.seqs[-1] >= result["last_seq"], 30, "the socket to catch up")
        detail = hub.health()["checks"]["supervisor"]["detail"]
    finally:
        if watcher is not None:
            watcher.halt.set()

    print("\nrecovery after SIGKILL (kill → /healthz ok again):")
    for fault, seconds in recoveries.items():
        print(f"  {fault:22s} {seconds:5.1f} s")
    print(f"  supervisor: {detail}")
    print(f"  socket reconnects: {watcher.connects - 1}, events received: {len(watcher.seqs)}")
    try:
        assert result["state"] == "succeeded", result["reason"]
        assert result["steps"].splitlines() == [f"step-{n}" for n in range(1, STEPS + 1)]  # none lost, none twice
        assert watcher.seqs == list(range(1, result["last_seq"] + 1))  # every event exactly once, in order
        assert watcher.connects >= 2  # the Daphne fault dropped it at least once, and it came back

        # Ctrl-C stops everything cleanly.
        last = hub.pids()
        hub.process.send_signal(signal.SIGINT)
        assert hub.process.wait(timeout=60) == 0, hub.log_tail()
        assert all(pid is None or not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
                   for pid in last.values())
        assert not (hub.data / "redis.sock").exists() and not (hub.data / "supervisor.json").exists()
    finally:
        hub.kill()
