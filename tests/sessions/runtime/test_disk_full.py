"""Issue 28, point 2: a full disk stopped sessions for good ("internal error: OSError:
[Errno 28] No space left on device"). Now a session that meets it waits for space and
goes on where it was once space is freed: a real worker, the jobs folder on a tmpfs of
its own, filled up by something else while a session of 30 steps runs."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from rooms.repository.git import GitError
from sessions.events import session_event_append
from sessions.models import SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.faults import disk_full, space_still_short
from tests.agents.tools.test_full_disk import fill, tmpfs
from tests.sessions.runtime.test_database_faults import counting_agent, lines_of
from tests.sessions.runtime.test_workers import ended, wait_for

STEPS = 30


@pytest.fixture
def small_jobs_disk():
    """The jobs folder on a 4 MB tmpfs (what every shell call writes its output to)."""
    with tmpfs(Path(settings.JOBS_DIR), "4m") as folder:
        yield folder


def _raised_from(cause: BaseException, error: Exception) -> Exception:
    try:
        try:
            raise cause
        except BaseException:
            raise error  # noqa: B904 - the implicit context, as most code leaves it
    except Exception as raised:
        return raised


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a tmpfs")
def test_a_session_waits_out_a_full_disk_and_goes_on_where_it_was(hub_workers, person, demo_room, small_jobs_disk):
    agent = counting_agent(demo_room, STEPS)
    worker = hub_workers(ATRIUM_DISK_RETRY_SECONDS="1")
    hub_workers.beat()
    task = task_create(room=demo_room, actor=person, title="Count", objective="Count to 30")
    session = session_start(task=task, agent=agent, actor=person)
    wait_for(lambda: len(lines_of(session)) >= 3, 120, "the session to be under way", [worker])
    filler = fill(small_jobs_disk)
    waiting = wait_for(lambda: SessionEvent.objects.filter(session=session, kind="session.waiting").first(), 60,
                       "the session to wait for space", [worker])
    assert "disk" in waiting.payload["reason"] and not ended(session), (session.state, session.reason)
    time.sleep(3)  # it keeps waiting while the disk stays full
    assert session.state == "running", session.reason
    filler.unlink()
    wait_for(lambda: ended(session), 180, "the session to end", [worker])
    assert session.state == "succeeded", session.reason
    assert lines_of(session) == [str(n) for n in range(STEPS)]  # each command once, none lost
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA integrity_check")
            assert cursor.fetchone()[0] == "ok"


@pytest.mark.parametrize(("error", "full"), [
    (OSError(28, "No space left on device"), True),
    (OSError(122, "Disk quota exceeded"), True),
    (OSError(13, "Permission denied"), False),
    (GitError(["add", "--all"], 128, "fatal: unable to write new index file: No space left on device"), True),
    (GitError(["commit"], 1, "nothing to commit, working tree clean"), False),
    (_raised_from(OSError(28, "No space left on device"), RuntimeError("the snapshot could not be written")), True),
])
def test_a_full_disk_is_recognised_wherever_it_surfaces(error, full):
    assert disk_full(error) is full


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a tmpfs")
def test_a_session_waiting_for_space_is_not_run_again_before_its_disk_has_room(person, demo_room, small_jobs_disk):
    """Each run would call the model anew, its call rolled back with the unit."""
    task = task_create(room=demo_room, actor=person, title="Count", objective="Count")
    session = session_start(task=task, agent=counting_agent(demo_room, 1), actor=person)
    assert space_still_short(session.pk) is None  # it waits for nothing
    session_event_append(session, "session.waiting", {"reason": "the disk is full", "step": 0})
    filler = fill(small_jobs_disk)
    assert str(small_jobs_disk) in str(space_still_short(session.pk))
    filler.unlink()
    assert space_still_short(session.pk) is None
