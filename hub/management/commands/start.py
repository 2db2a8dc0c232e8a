"""Start the whole hub on this machine: Redis (embedded unless REDIS_URL is set),
migrations, the demo, Daphne, one Celery worker, the sweep's own worker and beat, under
a supervisor that restarts any of them that exits (hub.supervision). Ctrl-C stops them
all."""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from io import StringIO

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from agents.confinement import sandbox_notice
from hub.embedded import EmbeddedRedis, NoEmbeddedRedis, parent_death_prefix, redis_server_binary
from hub.leftovers import claim_data_folder, earlier_run, stop_left
from hub.supervision import REPORT_NAME, Child, Supervisor

ANNOUNCE_WAIT_SECONDS = 120


class Command(BaseCommand):
    help = "Start Atrium: embedded Redis, migrations, demo room, Daphne, Celery worker and beat."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="Skip creating the demo room.")

    def handle(self, *args, host: str, port: int, no_demo: bool, **options) -> None:
        self._check_production_settings()
        self._check_data_dir()
        _log_to_console()
        self._stop_earlier_run()
        redis = self._embedded_redis()
        self._check_port_free(host, port)
        children = [Child("redis", lambda: redis.start().process)] if redis else []
        python = sys.executable
        # Each child dies with the supervisor (the kernel's parent-death signal, set by
        # setpriv before the child runs), so a killed supervisor leaves no orphan running
        # sessions, and the next `start` finds nothing in its way. Sandboxed jobs live in
        # sessions of their own on purpose: a resumed session collects them.
        dies_with_us = parent_death_prefix("KILL")
        for name, argv in (
            ("daphne", [python, "-m", "daphne", "-b", host, "-p", str(port), "hub.asgi:application"]),
            ("worker", [python, "-m", "celery", "-A", "hub", "worker", "--concurrency", "1",
                        "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--loglevel", "INFO"]),
            # Beat's sweep on its own queue and worker: a busy session worker never delays it.
            # Both log warnings only: at INFO a sweep every few seconds buried what matters.
            ("sweeper", [python, "-m", "celery", "-A", "hub", "worker", "--concurrency", "1",
                         "-n", "sweeper@%h", "-Q", settings.CELERY_SWEEP_QUEUE, "--loglevel", "WARNING"]),
            ("beat", [python, "-m", "celery", "-A", "hub", "beat", "--loglevel", "WARNING",
                      "--schedule", str(settings.DATA_DIR / "celerybeat-schedule")]),
        ):
            # Own process group: Ctrl-C reaches us once, and we stop each child in order.
            children.append(Child(name, lambda argv=argv, name=name: subprocess.Popen(
                [*dies_with_us, *argv], start_new_session=True, env=_child_env(name))))
        supervisor = Supervisor(children, report_path=settings.DATA_DIR / REPORT_NAME)
        signal.signal(signal.SIGINT, lambda signum, frame: supervisor.request_stop())
        signal.signal(signal.SIGTERM, lambda signum, frame: supervisor.request_stop())
        try:
            if redis:
                supervisor.start_all(["redis"])
                self.stdout.write(f"embedded redis on {redis.url}")
            call_command("migrate", interactive=False, verbosity=0)
            self.stdout.write("migrations applied")
            # Agents' commands run in a sandbox; say so when they cannot, or may run without one.
            if notice := sandbox_notice():
                self.stderr.write(self.style.WARNING(notice))
            else:
                self.stdout.write("sandbox: bubblewrap")
            if not settings.WHITENOISE_USE_FINDERS:
                # A deployment's WhiteNoise serves only collected files.
                call_command("collectstatic", interactive=False, verbosity=0)
                self.stdout.write(f"static files collected in {settings.STATIC_ROOT}")
            demo = StringIO()
            if not no_demo:
                call_command("seed_demo", url=f"http://{host}:{port}/", stdout=demo)
            if not supervisor.stopping:
                supervisor.start_all()
                # Said last, once the hub answers: under the children's start-up banners it was lost.
                banner = (f"Atrium is running at http://{host}:{port}/  (Ctrl-C stops it; data in "
                          f"{settings.DATA_DIR})\n{demo.getvalue()}")
                threading.Thread(target=self._announce, args=(host, port, banner, supervisor), daemon=True).start()
                supervisor.run()
            self.stdout.write("stopping…")
        finally:
            # Redis last: the workers finish their work and acknowledge it first.
            supervisor.stop_all(order=[c.name for c in children if c.name != "redis"]
                                + (["redis"] if redis else []))

    def _announce(self, host: str, port: int, banner: str, supervisor: Supervisor) -> None:
        """Print ``banner`` once /healthz says ok, or after ANNOUNCE_WAIT_SECONDS with what
        it said instead; nothing once the hub is stopping."""
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/healthz"
        named = [name for name in settings.ALLOWED_HOSTS if name != "*" and not name.startswith(".")]
        request = urllib.request.Request(url, headers={"Host": named[0]} if named else {})
        deadline, said = time.monotonic() + ANNOUNCE_WAIT_SECONDS, "no answer yet"
        while time.monotonic() < deadline and not supervisor.stopping:
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    if response.status == 200:
                        said = ""
                        break
            except urllib.error.HTTPError as error:
                said = error.read().decode(errors="replace")[:500]
            except (OSError, ValueError) as error:
                said = str(error)
            time.sleep(0.5)
        if supervisor.stopping:
            return
        if said:
            self.stderr.write(self.style.WARNING(f"/healthz is not ok after {ANNOUNCE_WAIT_SECONDS} s: {said}"))
        self.stdout.write((self.style.WARNING if said else self.style.SUCCESS)("\n" + banner))

    def _check_port_free(self, host: str, port: int) -> None:
        """A port another program holds is said at once (Daphne would exit, be restarted
        and exit again, for good)."""
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host.strip("[]"), port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise CommandError(f"The hub cannot listen on {host}:{port}: {exc.strerror or exc}.") from None
                raise CommandError(f"{host}:{port} is already in use: stop what listens there, "
                                   "or start the hub with --port on another.") from None

    def _check_production_settings(self) -> None:
        """Without DEBUG Django answers only the host names in ALLOWED_HOSTS (which has no
        default once DATABASE_URL is set), and with none every page would be a 400."""
        if not settings.DEBUG and not settings.ALLOWED_HOSTS:
            raise CommandError(
                "ALLOWED_HOSTS is empty (it has no default once DATABASE_URL is set), so every request "
                "would be refused. Set ALLOWED_HOSTS to the hub's host names (e.g. ALLOWED_HOSTS=127.0.0.1,localhost)."
            )

    def _check_data_dir(self) -> None:
        data, checkout = settings.DATA_DIR, settings.BASE_DIR
        if data.is_relative_to(checkout):
            self.stderr.write(self.style.WARNING(
                f"The data folder {data} is inside the hub's checkout: commands run in rooms' worktrees "
                "there may pick up the hub's own configuration (pyproject.toml). Set ATRIUM_DATA_DIR to a "
                "folder outside it."))
        earlier = checkout / "var"
        if not os.environ.get("ATRIUM_DATA_DIR") and (earlier / "atrium.sqlite3").exists():
            self.stderr.write(self.style.WARNING(
                f"Rooms from an earlier version are in {earlier}; the data folder is now {data}. To keep "
                f"them, stop the hub and move that folder's contents there (mv {earlier}/* {data}/)."))

    def _stop_earlier_run(self) -> None:
        """Refuse while another `start` holds this data folder; stop what a killed one
        left running (where its children could not be made to die with it)."""
        try:
            self._data_folder_lock = claim_data_folder(settings.DATA_DIR)
        except OSError as exc:
            raise CommandError(f"The data folder {settings.DATA_DIR} cannot be locked: {exc}") from exc
        earlier = earlier_run(settings.DATA_DIR)
        if self._data_folder_lock is None or earlier.supervisor is not None:
            pid = earlier.supervisor
            which, kill = (f": its supervisor is pid {pid}", f", or kill {pid}") if pid else ("", "")
            raise CommandError(f"A hub already runs on this data folder ({settings.DATA_DIR}){which}. Stop it "
                               f"first (Ctrl-C where it runs{kill}) or set ATRIUM_DATA_DIR to another folder.")
        if earlier.left:
            named = ", ".join(f"{p.name} (pid {p.pid})" for p in earlier.left)
            self.stderr.write(self.style.WARNING(f"An earlier run's supervisor is gone; stopping what it left: {named}"))
            stop_left(earlier.left)

    def _embedded_redis(self) -> EmbeddedRedis | None:
        if os.environ.get("REDIS_URL"):
            return None
        try:
            redis_server_binary()  # before anything starts: say what to install, not a traceback
        except NoEmbeddedRedis as exc:
            raise CommandError(str(exc)) from exc
        embedded = EmbeddedRedis(settings.DATA_DIR / "redis.sock", die_with_parent=True)
        if embedded.ping():
            raise CommandError(
                f"A hub already runs on this data folder ({settings.DATA_DIR}); stop it first "
                "or set ATRIUM_DATA_DIR to another folder."
            )
        return embedded


def _log_to_console() -> None:
    """The supervisor's restarts go to the terminal, next to the children's own logs."""
    logger = logging.getLogger("atrium.supervisor")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(asctime)s: supervisor] %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(logging.INFO)


def _child_env(name: str) -> dict[str, str]:
    """Celery processes keep their database connections (one thread each); the web process
    must not: under ASGI every request's thread is new, and a kept connection would
    outlive it (Django says to disable persistent connections there). It draws them from
    a pool instead (PostgreSQL only; hub/settings.py)."""
    env = dict(os.environ)
    if name == "daphne":
        env.setdefault("DB_POOL_SIZE", "40")
    else:
        env.setdefault("DB_CONN_MAX_AGE", "60")
    return env
