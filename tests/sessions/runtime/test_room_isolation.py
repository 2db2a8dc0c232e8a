"""A room's commands see only the room. Under the default data folder (the user's data
directory, outside any checkout) a room repository with its own pytest configuration,
`@pytest.mark.slow` tests and markers of its own passes its check through a real
worker: the hub's pyproject.toml (its `--strict-markers`, `-m 'not bench'`, its test
plugin) and the hub's PYTEST_ADDOPTS/PYTHONPATH never reach it."""

from __future__ import annotations

from django.conf import settings

from agents.models import AgentProfile
from hub.env import default_data_dir
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.conftest import PROJECT_ROOT
from tests.sessions.runtime.test_workers import ended, wait_for

ROOM_PYPROJECT = """\
[project]
name = "roomlib"
version = "0.1"

[tool.pytest.ini_options]
addopts = "--strict-markers"
markers = [
    "slow: takes a while",
    "integration: talks to other parts",
    "bench: the room's own benchmarks, run every time",
]
"""
ROOM_TESTS = """\
import pytest


def test_fast():
    assert 1 + 1 == 2


@pytest.mark.slow
def test_slow():
    assert sum(range(1000)) == 499500


@pytest.mark.integration
def test_integration():
    assert "room".upper() == "ROOM"


@pytest.mark.bench
def test_bench():
    assert sorted([3, 1, 2]) == [1, 2, 3]
"""


def test_a_room_with_its_own_markers_passes_its_check_under_the_default_data_folder(
    hub_workers, tmp_path, monkeypatch, person
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    data_dir = default_data_dir()
    assert data_dir == tmp_path / "xdg" / "atrium"
    assert not data_dir.is_relative_to(PROJECT_ROOT)
    for name in ("REPOS_DIR", "WORKTREES_DIR", "JOBS_DIR", "BLOBS_DIR"):
        monkeypatch.setattr(settings, name, data_dir / getattr(settings, name).name)

    template = tmp_path / "roomlib"
    template.mkdir()
    (template / "pyproject.toml").write_text(ROOM_PYPROJECT)
    (template / "test_roomlib.py").write_text(ROOM_TESTS)
    room = room_create(owner=person, name="Own markers", source=TemplateRepository(template),
                       check_command="python -m pytest -q")
    assert room.repo_path.startswith(str(data_dir))
    agent = AgentProfile.objects.create(name="idle", model="replay:nothing-to-do.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)

    # The worker runs the way `manage.py start` does: no ATRIUM_DATA_DIR, from the hub's
    # checkout, and with the hub's own pytest settings in its environment.
    worker = hub_workers(fast=False, ATRIUM_DATA_DIR="", XDG_DATA_HOME=str(tmp_path / "xdg"),
                         PYTEST_ADDOPTS="-p hub.pytest_plugin -m 'not slow and not bench'",
                         PYTHONPATH=str(PROJECT_ROOT))
    task = task_create(room=room, actor=person, title="Check", objective="Pass the room's check")
    session = session_start(task=task, agent=agent, actor=person)
    wait_for(lambda: ended(session), 120, "the session to end", [worker])
    verify = SessionEvent.objects.get(session=session, kind="verify")
    output = verify.payload["output"]
    assert verify.payload["exit_code"] == 0, output
    assert "4 passed" in output and "deselected" not in output and "warning" not in output.lower(), output
    assert session.state == "succeeded", session.reason
    session.refresh_from_db()
    assert session.worktree_path.startswith(str(data_dir))
