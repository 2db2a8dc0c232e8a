"""The Celery worker `manage.py eval` starts when no hub is running its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings

from hub.embedded import EmbeddedRedis

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class EvalWorker:
    def __init__(self, *, concurrency: int = 2, log_path: Path | None = None) -> None:
        self.nodename = f"atrium-eval-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        self.log_path = log_path or Path(settings.DATA_DIR) / "eval-worker.log"
        argv = [sys.executable, "-m", "celery", "-A", "hub", "worker", "--hostname", self.nodename,
                "--queues", settings.CELERY_TASK_DEFAULT_QUEUE, "--pool", "prefork", "--concurrency",
                str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat",
                "--loglevel", "WARNING"]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(argv, cwd=PROJECT_ROOT, env={**os.environ}, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        from hub.celery import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the eval worker exited (code {self.process.returncode}); see {self.log_path}")
            if app.control.ping(destination=[self.nodename], timeout=0.5):
                return
        self.stop()
        raise RuntimeError(f"the eval worker did not answer in {timeout:g} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def embedded_redis_if_needed() -> EmbeddedRedis | None:
    """On the embedded defaults (no REDIS_URL) with no hub running, the broker is not
    there: start the embedded Redis for this run, as `manage.py start` would."""
    if os.environ.get("REDIS_URL"):
        return None
    embedded = EmbeddedRedis(Path(settings.DATA_DIR) / "redis.sock")
    if embedded.ping():
        return None  # a hub runs on this data folder
    return embedded.start()
