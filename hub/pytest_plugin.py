"""Embedded services for the test run, set up before Django reads its settings.

Without DATABASE_URL the run gets its own data folder (SQLite test database, repos,
worktrees), so parallel runs never share files. Without REDIS_URL it gets its own
embedded Redis. With both set (CI), the tests talk to the real servers.

Under pytest-xdist each worker is such a run of its own: its own data folder and
embedded Redis, or on real servers its own Redis database, queue and channel prefix
(pytest-django gives it its own test database).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from hub.embedded import EmbeddedRedis

_redis: EmbeddedRedis | None = None
_run_dir: Path | None = None
# The variables this plugin set, named for an xdist worker: it inherits the controller's
# environment and sets each of them again for itself.
SET_HERE = "ATRIUM_TEST_RUN_SET"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args) -> None:
    global _redis, _run_dir
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker:
        for name in filter(None, os.environ.pop(SET_HERE, "").split(",")):
            os.environ.pop(name, None)
        _keep_apart(worker)
    unset = {name for name in ("ATRIUM_DATA_DIR", "ATRIUM_REPLAY_DIR", "REDIS_URL") if not os.environ.get(name)}
    os.environ[SET_HERE] = ",".join(sorted(unset))
    _remove_left_behind()
    run_dir = _run_dir = Path(tempfile.mkdtemp(prefix=f"atrium-test-{os.getpid()}-{worker}-"))
    os.environ.setdefault("ATRIUM_DATA_DIR", str(run_dir / "data"))
    # With DATABASE_URL set (CI) the settings demand a SECRET_KEY and list no hosts. The
    # run's own key and the hosts its clients use (test client, websocket tests, Daphne
    # subprocesses) fill in what CI leaves unset; hub subprocesses inherit both.
    if not os.environ.get("SECRET_KEY") and not os.environ.get("SECRET_KEY_FILE"):
        os.environ["SECRET_KEY"] = f"atrium-test-run-{secrets.token_urlsafe(32)}"
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
    # A test machine's disk may be small: the hub's refusal below a free minimum is tested
    # with its own setting (tests/hub/test_health.py).
    os.environ.setdefault("ATRIUM_MIN_FREE_MB", "64")
    # The suite's wire-protocol servers listen on this machine: its operator allows them
    # as agents' base URLs (tests/security/test_base_urls.py runs without it).
    os.environ.setdefault("ATRIUM_BASE_URL_ALLOW", "127.0.0.0/8,localhost,::1")
    # `replay:` models play only from the hub's replay folder: the run's holds the shipped
    # recordings and the test suite's.
    if not os.environ.get("ATRIUM_REPLAY_DIR"):
        replays = run_dir / "replays"
        replays.mkdir()
        root = Path(__file__).resolve().parent.parent
        for recording in [*root.glob("agents/replays/*.json"), *root.glob("tests/**/replays/*.json")]:
            shutil.copy2(recording, replays / recording.name)
        os.environ["ATRIUM_REPLAY_DIR"] = str(replays)
    if not os.environ.get("REDIS_URL"):
        _redis = EmbeddedRedis(run_dir / "redis.sock", die_with_parent=True).start()
        os.environ["REDIS_URL"] = _redis.url


def _remove_left_behind() -> None:
    """The data folders of runs whose process is gone (killed, or a worker ended on
    Ctrl-C before it could clean up)."""
    for folder in Path(tempfile.gettempdir()).glob("atrium-test-*-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not Path("/proc", pid).exists():
            shutil.rmtree(folder, ignore_errors=True)


def _keep_apart(worker: str) -> None:
    """An xdist worker on the real servers: a Redis database of its own (workers 0-14
    take databases 1-15; more workers share them, their queues and prefixes still apart),
    a queue and channel prefix of its own, rooms' users of its own, and a folder of its
    own in a data folder the person named."""
    index = int(worker.removeprefix("gw"))
    # Rooms' users are the base plus the room's id, and every worker's rooms count from 1.
    base = int(os.environ.get("ATRIUM_ROOM_UID_BASE") or "1500000000")
    if base:
        os.environ["ATRIUM_ROOM_UID_BASE"] = str(base + index * 10_000_000)
    if os.environ.get("ATRIUM_DATA_DIR"):
        os.environ["ATRIUM_DATA_DIR"] = os.path.join(os.environ["ATRIUM_DATA_DIR"], worker)
    if os.environ.get("REDIS_URL"):
        parts = urlsplit(os.environ["REDIS_URL"])
        if parts.scheme in ("redis", "rediss"):
            query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "db"])  # a ?db= would win
            os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{1 + index % 15}", query=query))
    for name, default in (("CELERY_QUEUE", "atrium-test"), ("CHANNELS_PREFIX", "atrium-test")):
        os.environ[name] = f"{os.environ.get(name) or default}-{worker}"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config) -> None:
    """One process where what a test prints is the point: benchmarks and ``-s``
    (pytest-xdist's workers do not pass their output on)."""
    if getattr(config.option, "dist", "no") != "no" and (
            config.option.capture == "no" or "bench" in (config.option.markexpr or "").replace("not bench", "")):
        config.option.dist, config.option.numprocesses = "no", 0


def pytest_unconfigure(config) -> None:
    if _redis is not None:
        _redis.stop()
    if _run_dir is not None:
        shutil.rmtree(_run_dir, ignore_errors=True)
