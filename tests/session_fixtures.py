"""Fixtures of a room with a recorded agent and real hub workers, for any test that runs sessions
(registered by tests/conftest.py as a plugin)."""

from __future__ import annotations

import socket
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_RULES
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule
from tests.conftest import CeleryWorker, _wait_until, start_hub_process

DEMO_REPO = Path(__file__).resolve().parents[1] / "hub" / "demo_repo"


@pytest.fixture
def person(transactional_db):
    return get_user_model().objects.create_user("pat", password="pw-pat-12345")


@pytest.fixture
def demo_room(person):
    return room_create(owner=person, name="Runtime demo", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")


@pytest.fixture
def replay_agent(demo_room):
    agent = AgentProfile.objects.create(name="fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    return agent


@pytest.fixture
def allow_demo_tools(demo_room):
    """The demo's own rules (its recording runs unittest), edits of Python files (the demo
    asks a person for those), and pytest for the suite's recordings."""
    for tool, path_glob, command_prefix in DEMO_RULES:
        ApprovalRule.objects.create(room=demo_room, tool=tool, path_glob=path_glob, command_prefix=command_prefix,
                                    decision="allow")
    ApprovalRule.objects.create(room=demo_room, tool="edit_file", path_glob="*.py", decision="allow")
    ApprovalRule.objects.create(room=demo_room, tool="shell", command_prefix="python -m pytest", decision="allow")


FAST = {"ATRIUM_LEASE_SECONDS": "4", "ATRIUM_SWEEP_SECONDS": "1", "ATRIUM_SHELL_YIELD_SECONDS": "30"}


@pytest.fixture
def hub_workers(transactional_db, tmp_path):
    """Start workers (and one beat) with test-friendly timings; stop them all after."""
    started = []

    def worker(*, fast: bool = True, queue: str = settings.CELERY_TASK_DEFAULT_QUEUE, concurrency: int = 1,
               wrap=None, **env) -> CeleryWorker:
        """``wrap``: the command line as it is to run (in namespaces of its own, say)."""
        nodename = f"atrium-e2e-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        argv = [sys.executable, "-m", "celery", "-A", "hub", "worker", "--hostname", nodename,
                "--queues", queue, "--pool", "prefork", "--concurrency", str(concurrency),
                "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"]
        process = start_hub_process("celery worker", wrap(argv) if wrap else argv,
                                    tmp_path / f"worker-{len(started)}.log", **{**(FAST if fast else {}), **env})
        started.append(process)
        celery = CeleryWorker(hub_process=process, nodename=nodename, queue=queue)
        _wait_until(lambda: celery.ping(timeout=0.5), process, "answer a ping")
        return celery

    def beat(*, fast: bool = True):
        """Beat and the worker of its sweep queue (as `manage.py start` and compose run them)."""
        worker(fast=fast, queue=settings.CELERY_SWEEP_QUEUE)
        process = start_hub_process(
            "celery beat",
            [sys.executable, "-m", "celery", "-A", "hub", "beat", "--loglevel", "INFO",
             "--schedule", str(tmp_path / "beat-schedule")],
            tmp_path / "beat.log", **(FAST if fast else {}),
        )
        started.append(process)
        return process

    worker.beat = beat
    yield worker
    for process in started:
        process.stop()
