"""Start the whole hub on this machine: Redis (embedded unless REDIS_URL is set),
migrations, the demo, Daphne, one Celery worker and beat. Ctrl-C stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from agents.runtime.confinement import sandbox_notice
from hub.embedded import EmbeddedRedis


class Command(BaseCommand):
    help = "Start Atrium: embedded Redis, migrations, demo room, Daphne, Celery worker and beat."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="Skip creating the demo room.")

    def handle(self, *args, host: str, port: int, no_demo: bool, **options) -> None:
        self._check_production_settings()
        redis = self._start_redis()
        children: list[subprocess.Popen[bytes]] = []
        try:
            call_command("migrate", interactive=False, verbosity=0)
            self.stdout.write("migrations applied")
            # Agents' commands run in a sandbox; say so when they cannot, or may run without one.
            if notice := sandbox_notice():
                self.stderr.write(self.style.WARNING(notice))
            else:
                self.stdout.write("sandbox: bubblewrap")
            if not settings.DEBUG:
                # Without DEBUG, WhiteNoise serves only collected files.
                call_command("collectstatic", interactive=False, verbosity=0)
                self.stdout.write(f"static files collected in {settings.STATIC_ROOT}")
            if not no_demo:
                call_command("seed_demo", url=f"http://{host}:{port}/", stdout=self.stdout)
            python = sys.executable
            for argv in (
                [python, "-m", "daphne", "-b", host, "-p", str(port), "hub.asgi:application"],
                [python, "-m", "celery", "-A", "hub", "worker", "--concurrency", "1",
                 "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--loglevel", "INFO"],
                [python, "-m", "celery", "-A", "hub", "beat", "--loglevel", "INFO",
                 "--schedule", str(settings.DATA_DIR / "celerybeat-schedule")],
            ):
                # Own process group: Ctrl-C reaches us once, and we stop each child in order.
                children.append(subprocess.Popen(argv, start_new_session=True))
            self.stdout.write(self.style.SUCCESS(f"Atrium is running at http://{host}:{port}/  (Ctrl-C stops it)"))
            self._wait(children)
        finally:
            self._stop(children)
            if redis:
                redis.stop()

    def _check_production_settings(self) -> None:
        """DEBUG is off by default once DATABASE_URL is set; then Django answers only
        the host names in ALLOWED_HOSTS, and with none every page would be a 400."""
        if not settings.DEBUG and not settings.ALLOWED_HOSTS:
            raise CommandError(
                "DEBUG is off (the default when DATABASE_URL is set) and ALLOWED_HOSTS is empty, "
                "so every request would be refused. Set ALLOWED_HOSTS to the hub's host names "
                "(e.g. ALLOWED_HOSTS=127.0.0.1,localhost), or DEBUG=true on a development machine."
            )

    def _start_redis(self) -> EmbeddedRedis | None:
        if os.environ.get("REDIS_URL"):
            return None
        embedded = EmbeddedRedis(settings.DATA_DIR / "redis.sock")
        if embedded.ping():
            raise CommandError(
                f"A hub already runs on this data folder ({settings.DATA_DIR}); stop it first "
                "or set ATRIUM_DATA_DIR to another folder."
            )
        embedded.start()
        self.stdout.write(f"embedded redis on {embedded.url}")
        return embedded

    def _wait(self, children: list[subprocess.Popen[bytes]]) -> None:
        stop = {"now": False}

        def request_stop(signum, frame) -> None:
            stop["now"] = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
        while not stop["now"]:
            for child in children:
                if child.poll() is not None:
                    raise CommandError(f"{child.args[2:5]} exited with code {child.returncode}; stopping")
            time.sleep(0.3)
        self.stdout.write("stopping…")

    def _stop(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
