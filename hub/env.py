"""Typed readers for settings that come from the environment."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
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


def envsecret(name: str, *, required: bool, dev_default: str = "") -> str:
    """Read a secret from NAME or from the file named by NAME_FILE.

    In production (``required``) a missing secret stops the process with a clear
    message instead of running with a guessable value.
    """
    if file_path := os.environ.get(f"{name}_FILE"):
        with open(file_path, encoding="utf-8") as handle:
            return handle.read().strip()
    value = os.environ.get(name, "")
    if value:
        return value
    if required:
        raise ImproperlyConfigured(
            f"{name} is not set. Production (DEBUG off) needs it: set {name} or {name}_FILE."
        )
    return dev_default


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
