"""Typed readers for settings that come from the environment."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key
from platformdirs import user_data_dir


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: str = "False") -> bool:
    return env(name, default).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: str) -> int:
    value = env(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def envfloat(name: str, default: str) -> float:
    value = env(name, default)
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def envsecret(name: str, *, kept_in: Path | None = None) -> str:
    """Read a secret from NAME or from the file named by NAME_FILE.

    Unset, it is generated once and kept in the file ``kept_in``, so it lasts across
    restarts; when ``kept_in`` is None (production) the process stops with a clear
    message instead of running with a guessable value.
    """
    if file_path := os.environ.get(f"{name}_FILE"):
        with open(file_path, encoding="utf-8") as handle:
            return handle.read().strip()
    value = os.environ.get(name, "")
    if value:
        return value
    if kept_in is None:
        raise ImproperlyConfigured(
            f"{name} is not set. Production (DATABASE_URL set, DEBUG off) needs it: set {name} or {name}_FILE."
        )
    return kept_secret(kept_in)


def kept_secret(path: Path) -> str:
    """The secret in ``path``, generated there (readable by this user only) if it is not yet.

    Written aside and linked into place, so processes starting together all read the
    one that won, never a half-written file.
    """
    if not path.exists():
        descriptor, aside = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(get_random_secret_key())
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another process won
                os.link(aside, path)
        finally:
            os.unlink(aside)
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise ImproperlyConfigured(f"{path} is empty: delete it and a new key is generated (everyone signs in again).")
    return value


def celery_url(redis_url: str) -> str:
    """Kombu spells a Redis unix socket ``redis+socket://``; redis-py spells it ``unix://``."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


def default_data_dir() -> Path:
    """Where the hub keeps its data unless ATRIUM_DATA_DIR says otherwise: the user's
    data folder ($XDG_DATA_HOME/atrium, usually ~/.local/share/atrium), never inside a
    checkout, so a room's commands, which run in worktrees under it, never find the hub's
    own pyproject.toml (pytest options, markers, plugins) by walking up."""
    return Path(user_data_dir("atrium", appauthor=False))
