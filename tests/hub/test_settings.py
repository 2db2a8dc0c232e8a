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
    "import json, hub.settings as s; print(json.dumps({name: getattr(s, name) for name in ("
    "'DEBUG', 'SECRET_KEY', 'ALLOWED_HOSTS', 'SESSION_COOKIE_SECURE', 'WHITENOISE_USE_FINDERS', 'HUB_URL')}))"
)
# Anything a developer's shell or the test run may have set that would decide the case.
DECIDING = ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL", "ALLOWED_HOSTS", "ATRIUM_TLS_PROXY",
            "ATRIUM_HUB_URL", "ATRIUM_BLOB_STORE")


def clean_env(tmp_path: Path, **env: str) -> dict[str, str]:
    clean = {name: value for name, value in os.environ.items() if name not in DECIDING}
    return {**clean, "ATRIUM_DATA_DIR": str(tmp_path / "data"), **env}


def read_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        cwd=PROJECT_ROOT, env=clean_env(tmp_path, **env), capture_output=True, text=True, timeout=60,
    )


def settings_of(tmp_path: Path, **env: str) -> dict:
    completed = read_settings(tmp_path, **env)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_on_the_embedded_defaults_debug_is_off_with_a_key_of_its_own_kept_across_restarts(tmp_path):
    read = settings_of(tmp_path)
    assert read["DEBUG"] is False
    kept = tmp_path / "data" / "secret_key"
    assert read["SECRET_KEY"] == kept.read_text() and len(read["SECRET_KEY"]) >= 50
    assert kept.stat().st_mode & 0o777 == 0o600
    assert settings_of(tmp_path)["SECRET_KEY"] == read["SECRET_KEY"]
    assert settings_of(tmp_path / "another")["SECRET_KEY"] != read["SECRET_KEY"]
    # One machine on localhost over plain http, its static files straight from the apps.
    assert read["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost"]
    assert read["SESSION_COOKIE_SECURE"] is False
    assert read["WHITENOISE_USE_FINDERS"] is True


def test_processes_starting_together_on_a_fresh_data_folder_share_one_key(tmp_path):
    starting = [
        subprocess.Popen([sys.executable, "-c", PRINT_SETTINGS], cwd=PROJECT_ROOT, env=clean_env(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {json.loads(process.communicate(timeout=60)[0])["SECRET_KEY"] for process in starting}
    assert keys == {(tmp_path / "data" / "secret_key").read_text()}
    assert [path.name for path in (tmp_path / "data").iterdir() if "secret_key" in path.name] == ["secret_key"]


def test_an_emptied_kept_key_stops_the_process_saying_what_to_do(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "secret_key").write_text("\n")
    completed = read_settings(tmp_path)
    assert completed.returncode != 0
    assert "secret_key is empty: delete it and a new key is generated" in completed.stderr


def test_with_a_database_url_and_no_debug_a_missing_secret_key_stops_the_process(tmp_path):
    completed = read_settings(tmp_path, DATABASE_URL="postgres://atrium@db.example:5432/atrium")
    assert completed.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured: SECRET_KEY is not set." in completed.stderr
    assert "set SECRET_KEY or SECRET_KEY_FILE" in completed.stderr
    assert not (tmp_path / "data" / "secret_key").exists()


def test_with_a_database_url_the_hub_is_a_deployment(tmp_path):
    read = settings_of(tmp_path, DATABASE_URL="postgres://atrium@db.example:5432/atrium", SECRET_KEY="k" * 50)
    assert read["DEBUG"] is False
    assert read["SECRET_KEY"] == "k" * 50
    assert read["ALLOWED_HOSTS"] == []
    assert read["SESSION_COOKIE_SECURE"] is True
    assert read["WHITENOISE_USE_FINDERS"] is False


def test_behind_a_tls_proxy_a_local_hub_sends_secure_cookies(tmp_path):
    assert settings_of(tmp_path, ATRIUM_TLS_PROXY="true")["SESSION_COOKIE_SECURE"] is True


@pytest.mark.parametrize(("database_url", "debug", "expected"), [
    ("postgres://atrium@db.example:5432/atrium", "true", True),
    ("", "true", True),
    ("", "false", False),
])
def test_an_explicit_debug_wins_over_the_default(tmp_path, database_url, debug, expected):
    env = {"DEBUG": debug, "SECRET_KEY": "k" * 50}
    if database_url:
        env["DATABASE_URL"] = database_url
    assert settings_of(tmp_path, **env)["DEBUG"] is expected


@pytest.mark.parametrize("env", [{}, {"DATABASE_URL": "postgres://atrium@db.example:5432/atrium", "SECRET_KEY": "k" * 50}])
def test_a_worker_elsewhere_without_a_shared_database_and_blob_store_stops_saying_why(tmp_path, env):
    completed = read_settings(tmp_path, ATRIUM_HUB_URL="http://hub:8000", **env)
    assert completed.returncode != 0
    assert "ATRIUM_HUB_URL (a worker that does not see the hub's folders) needs the hub's DATABASE_URL" \
           in completed.stderr


def test_a_worker_elsewhere_with_both_starts_and_reads_the_hubs_address(tmp_path):
    read = settings_of(tmp_path, ATRIUM_HUB_URL="http://hub:8000/", ATRIUM_BLOB_STORE="database",
                       DATABASE_URL="postgres://atrium@db.example:5432/atrium", SECRET_KEY="k" * 50)
    assert read["HUB_URL"] == "http://hub:8000"  # the remote's address is this plus /rooms/<slug>.git
