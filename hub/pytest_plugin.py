"""Embedded services for the test run, set up before Django reads its settings.

Without DATABASE_URL the run gets its own data folder (SQLite test database, repos,
worktrees), so parallel runs never share files. Without REDIS_URL it gets its own
embedded Redis. With both set (CI), the tests talk to the real servers.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from hub.embedded import EmbeddedRedis

_redis: EmbeddedRedis | None = None
_run_dir: Path | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args) -> None:
    global _redis, _run_dir
    run_dir = _run_dir = Path(tempfile.mkdtemp(prefix="atrium-test-"))
    os.environ.setdefault("ATRIUM_DATA_DIR", str(run_dir / "data"))
    # With DATABASE_URL set (CI) DEBUG defaults to off, and the settings then demand a
    # SECRET_KEY and list no hosts. The run's own key and the hosts its clients use
    # (test client, websocket tests, Daphne subprocesses) fill in what CI leaves unset;
    # hub subprocesses inherit both.
    if not os.environ.get("SECRET_KEY") and not os.environ.get("SECRET_KEY_FILE"):
        os.environ["SECRET_KEY"] = f"atrium-test-run-{secrets.token_urlsafe(32)}"
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
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
        _redis = EmbeddedRedis(run_dir / "redis.sock").start()
        os.environ["REDIS_URL"] = _redis.url


def pytest_unconfigure(config) -> None:
    if _redis is not None:
        _redis.stop()
    if _run_dir is not None:
        shutil.rmtree(_run_dir, ignore_errors=True)
