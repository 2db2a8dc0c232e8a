"""The Celery worker `manage.py eval` starts when no hub is running its own.

The broker it needs is the command's business (hub.management.commands.eval starts the
embedded Redis when there is none): the entry point runs services, agents use them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from celery import current_app
from django.conf import settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]


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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the eval worker exited (code {self.process.returncode}); see {self.log_path}")
            if current_app.control.ping(destination=[self.nodename], timeout=0.5):
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

