"""hub/settings.py read by a fresh interpreter with a chosen environment.

Settings are read once per process, so each case imports them in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PRINT_SETTINGS = (
    "import json, hub.settings as s; "
    "print(json.dumps({'DEBUG': s.DEBUG, 'SECRET_KEY': s.SECRET_KEY, 'ALLOWED_HOSTS': s.ALLOWED_HOSTS}))"
)
# Anything a developer's shell or the test run may have set that would decide the case.
DECIDING = ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL", "ALLOWED_HOSTS")


def read_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {name: value for name, value in os.environ.items() if name not in DECIDING}
    clean["ATRIUM_DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        cwd=PROJECT_ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60,
    )


def settings_of(tmp_path: Path, **env: str) -> dict:
    completed = read_settings(tmp_path, **env)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_on_the_embedded_defaults_debug_is_on_with_the_development_key(tmp_path):
    read = settings_of(tmp_path)
    assert read["DEBUG"] is True
    assert read["SECRET_KEY"] == "atrium-dev-only-not-secret"
    assert read["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost"]


def test_with_a_database_url_and_no_debug_a_missing_secret_key_stops_the_process(tmp_path):
    completed = read_settings(tmp_path, DATABASE_URL="postgres://atrium@db.example:5432/atrium")
    assert completed.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured: SECRET_KEY is not set." in completed.stderr
    assert "set SECRET_KEY or SECRET_KEY_FILE" in completed.stderr


def test_with_a_database_url_debug_defaults_to_off(tmp_path):
    read = settings_of(tmp_path, DATABASE_URL="postgres://atrium@db.example:5432/atrium", SECRET_KEY="k" * 50)
    assert read["DEBUG"] is False
    assert read["SECRET_KEY"] == "k" * 50
    assert read["ALLOWED_HOSTS"] == []


@pytest.mark.parametrize(("database_url", "debug", "expected"), [
    ("postgres://atrium@db.example:5432/atrium", "true", True),
    ("", "false", False),
])
def test_an_explicit_debug_wins_over_the_default(tmp_path, database_url, debug, expected):
    env = {"DEBUG": debug, "SECRET_KEY": "k" * 50}
    if database_url:
        env["DATABASE_URL"] = database_url
    assert settings_of(tmp_path, **env)["DEBUG"] is expected
