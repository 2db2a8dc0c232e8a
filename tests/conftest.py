"""Fixtures that run real hub processes against the test database.

``celery_worker`` starts ``celery -A hub worker`` and ``daphne_server`` starts Daphne,
each as a subprocess that sees this test run's database, Redis, data folder, queue and
channel prefix. Both request ``transactional_db``: what a test writes is committed, so
the subprocess sees it, and is flushed after the test (once the process has stopped).

The processes log to files under the test's tmp dir; a process that does not come up
fails the test with the tail of its log.

    def test_something(celery_worker):
        some_task.delay(...)        # runs in the real worker
        ...

    def test_page(daphne_server):
        urlopen(daphne_server.url + "/healthz")
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0

# A room with a recorded agent and real hub workers, for any test that runs sessions.
pytest_plugins = ["tests.session_fixtures"]


@pytest.fixture(scope="session", autouse=True)
def _a_database_for_the_room_locks(request) -> None:
    """On PostgreSQL the room lock is the database's (``rooms.repository.advisory``),
    taken on a connection of its own: a test that merges a worktree with no database
    fixture of its own still locks in this run's test database, which is made first."""
    if connection.vendor == "postgresql":
        request.getfixturevalue("django_db_setup")


@pytest.fixture(autouse=True)
def _nothing_remembered_from_another_tests_database() -> Iterator[None]:
    """What a process keeps of database rows in memory (blob texts, calibrations, session lengths, gateway sessions' contexts and histories) is of
    the rows of one test's database: the next test's is emptied."""
    yield
    from endpoint.hot import CONTEXTS, HISTORIES
    from observations.blobs import blob_texts_forget
    from observations.calibration import calibration_forget
    from sessions.selectors import session_lengths_forget

    blob_texts_forget()
    calibration_forget()
    session_lengths_forget()
    CONTEXTS.clear()
    HISTORIES.clear()


@pytest.fixture(autouse=True)
def _a_channel_layer_per_test() -> Iterator[None]:
    """Each test gets a channel layer of its own. channels-redis refuses two event loops
    receiving on one layer (Daphne runs one); a test whose loop ended with a read still
    waiting would otherwise hold the layer's receive locks against the next test's loop.
    The test's queued broadcasts leave on its layer, not the next test's."""
    yield
    from channels.layers import channel_layers

    from rooms import broadcast

    broadcast.flush()
    channel_layers.backends.clear()


# --- the environment a hub subprocess needs ---------------------------------------------


def subprocess_database_url() -> str:
    """A DATABASE_URL naming the database the tests run on (not the configured one).

    Called once the test database exists: ``connection.settings_dict["NAME"]`` is then
    the test database (the SQLite test file, or ``test_<name>`` on PostgreSQL).
    """
    name = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":
        if not name or str(name).startswith(":memory:") or "mode=memory" in str(name):
            raise RuntimeError("an in-memory SQLite test database cannot be shared with a subprocess")
        return f"sqlite:///{name}"
    if connection.vendor == "postgresql":
        configured = urlsplit(os.environ["DATABASE_URL"])
        return urlunsplit(configured._replace(path=f"/{name}"))
    raise RuntimeError(f"no subprocess DATABASE_URL for the {connection.vendor} backend")


def hub_process_env(**overrides: str) -> dict[str, str]:
    """The environment of a hub subprocess: this run's test DB, Redis and data folder.

    REDIS_URL and ATRIUM_DATA_DIR are always set by hub.pytest_plugin (embedded) or by
    CI (real servers); CELERY_QUEUE and CHANNELS_PREFIX pass through when CI sets them.
    """
    env = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "ATRIUM_DATA_DIR": os.environ["ATRIUM_DATA_DIR"],
        "DJANGO_SETTINGS_MODULE": "hub.settings",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(overrides)
    return env


@dataclass
class HubProcess:
    """A hub subprocess and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with code {self.process.returncode}:\n{self.log_tail()}"
            )

    def stop(self) -> None:
        """SIGTERM (a warm shutdown), then SIGKILL to the whole process group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        # Children a worker forked (prefork pool) must not outlive the test.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def start_hub_process(name: str, argv: list[str], log_path: Path, **env: str) -> HubProcess:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=PROJECT_ROOT,
            env=hub_process_env(**env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches its children
        )
    return HubProcess(name=name, process=process, log_path=log_path)


def _wait_until(ready, hub_process: HubProcess, what: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        hub_process.check_alive()
        if ready():
            return
        time.sleep(0.2)
    hub_process.stop()
    raise RuntimeError(f"{hub_process.name} did not {what} in {STARTUP_TIMEOUT_SECONDS:g} s:\n{hub_process.log_tail()}")


# --- Celery worker -------------------------------------------------------------------------


@dataclass
class CeleryWorker:
    hub_process: HubProcess
    nodename: str
    queue: str

    def ping(self, timeout: float = 1.0) -> bool:
        from hub.celery import app

        return bool(app.control.ping(destination=[self.nodename], timeout=timeout))


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[CeleryWorker]:
    """A real ``celery -A hub worker`` on this run's queues (sessions and sweep); answers
    pings before the test starts.

    Prefork with one child, like ``manage.py start``, so remote control (pings,
    revokes) is answered while a task runs.
    """
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    nodename = f"atrium-test-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    hub_process = start_hub_process(
        "celery worker",
        [
            sys.executable, "-m", "celery", "-A", "hub", "worker",
            "--hostname", nodename, "--queues", f"{queue},{settings.CELERY_SWEEP_QUEUE}",
            "--pool", "prefork", "--concurrency", "1",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel", "INFO",
        ],
        tmp_path / "celery-worker.log",
    )
    worker = CeleryWorker(hub_process=hub_process, nodename=nodename, queue=queue)
    try:
        _wait_until(lambda: worker.ping(timeout=0.5), hub_process, "answer a ping")
        yield worker
    finally:
        hub_process.stop()


# --- Daphne ------------------------------------------------------------------------------------


@dataclass
class DaphneServer:
    hub_process: HubProcess
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def start_daphne(log_path: Path, *, port: int | None = None, **env: str) -> DaphneServer:
    """Daphne serving the hub on 127.0.0.1 (a free port unless given), up and serving
    /login/; DEBUG on (static files straight from the apps, no collectstatic); its
    connections pooled, as `manage.py start` and compose run it."""
    host, port = "127.0.0.1", port or _free_port()
    hub_process = start_hub_process(
        "daphne",
        [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "hub.asgi:application"],
        log_path, **{"DEBUG": "true", "ALLOWED_HOSTS": host, "DB_POOL_SIZE": "40", **env},
    )
    server = DaphneServer(hub_process=hub_process, host=host, port=port)
    _wait_until(lambda: _serves(f"{server.url}/login/"), hub_process, "serve /login/")
    return server


@pytest.fixture
def daphne_server(transactional_db, tmp_path) -> Iterator[DaphneServer]:
    """The hub's ASGI app under a real Daphne on a free port (HTTP and websockets), with
    the channel layer of this run's Redis, so broadcasts from the test process reach its
    websockets too."""
    server = start_daphne(tmp_path / "daphne.log")
    try:
        yield server
    finally:
        server.hub_process.stop()


ORDINARY_USER = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")
AS_AN_ORDINARY_USER = Path(__file__).with_name("as_an_ordinary_user.py")


@pytest.fixture
def as_an_ordinary_user() -> Iterator[Callable[..., dict]]:
    """Run commands confined by a hub of its own user (uid 65534), as
    tests/as_an_ordinary_user.py describes: ``run(places, commands, ...,
    procs=[...])`` gives its JSON answer; ``procs`` are cgroup.procs files it joins first
    (its operator's delegation). Each place is a worktree and /tmp of the user's own."""
    if os.geteuid() != 0 or not SYSTEM_PYTHON.exists():
        pytest.skip("needs root to become an ordinary user, and the system's python3")
    home = Path(tempfile.mkdtemp(prefix="atrium-hub-user-"))  # pytest's tmp_path is root's alone
    os.chmod(home, 0o755)
    # The seccomp program is made with pyseccomp, which the system's python3 does not have.
    import pyseccomp

    (home / "lib").mkdir()
    shutil.copy(pyseccomp.__file__, home / "lib")

    def place(name: str, **options) -> dict:
        (home / name / "wt").mkdir(parents=True)
        subprocess.run(["chown", "-R", f"{ORDINARY_USER}:{ORDINARY_USER}", str(home / name)], check=True)
        return {"worktree": str(home / name / "wt"), "tmp": str(home / name / "tmp"), **options}

    def run(places: list[dict], commands: list, *, procs: tuple[Path, ...] = (), **spec) -> dict:
        # The shell joins the groups as root, then becomes the user (no Python between
        # fork and exec in a test process that may have threads).
        join = 'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'
        done = subprocess.run(
            ["/bin/sh", "-c", join, "sh", *map(str, procs), "--",
             "setpriv", f"--reuid={ORDINARY_USER}", f"--regid={ORDINARY_USER}", "--clear-groups", "--",
             str(SYSTEM_PYTHON), "-I", str(AS_AN_ORDINARY_USER),
             json.dumps({"places": places, "commands": commands, "python_path": [str(home / "lib")], **spec})],
            env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    run.place = place  # type: ignore[attr-defined]
    try:
        yield run
    finally:
        shutil.rmtree(home, ignore_errors=True)
