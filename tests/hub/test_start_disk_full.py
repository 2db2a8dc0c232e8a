"""Issue 28, done when: a full disk stopped the whole hub (the supervisor's own status
write raised ENOSPC and `start` stopped every process), and nothing came back once space
was freed. Here the hub of `manage.py start` on the newcomer's defaults (SQLite and the
embedded Redis, both in the data folder) runs with its whole data folder on a tmpfs of
its own, filled to ENOSPC under a counting session: the hub stays up, the session stalls
without failing and goes on once space is freed, each command once, and SQLite's
integrity check is clean."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time

import pytest

from tests.agents.tools.test_full_disk import fill, tmpfs
from tests.hub.test_start_faults import Hub

STEPS = 60  # enough that a loaded machine cannot finish them before the disk fills

@pytest.mark.timeout(600)
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a tmpfs")
def test_a_full_data_folder_leaves_the_hub_up_and_the_session_goes_on_once_there_is_space(tmp_path):
    with tmpfs(tmp_path / "data", "64m") as data:
        hub = Hub(tmp_path, ATRIUM_DISK_RETRY_SECONDS="1", ATRIUM_MIN_FREE_MB="16")
        try:
            hub.wait(hub.healthy, 120, "the hub to come up healthy")
            session = hub.start_counting(STEPS)

            def state() -> dict:
                return hub.counted(session)

            hub.wait(lambda: len(state()["lines"]) >= 3, 120, "the session to be under way")
            filler = fill(data)
            # Nothing can be written now, the database's own file and Redis's included: the
            # session stalls (it says it waits only where the database still takes that
            # write), and the hub rides it out: /healthz answering, the supervisor up (the
            # Celery processes exit while Redis refuses writes, and are started again).
            time.sleep(15)
            during = state()
            assert during["state"] not in {"failed", "succeeded"}, during
            health = hub.health()
            assert health is not None and health["checks"]["disk"]["ok"] is False, health
            assert hub.process.poll() is None  # the supervisor: it restarts what Redis's refusals stop

            filler.unlink()
            done = hub.wait(lambda: (s := state())["state"] not in {"queued", "running", "waiting"} and s, 240,
                            "the session to end")
            assert done["state"] == "succeeded", done["reason"]
            assert done["lines"] == [str(n) for n in range(STEPS)]  # each command once, none lost
            hub.wait(hub.healthy, 60, "/healthz to be ok again")
        finally:
            hub._last_pids = hub.pids() if (data / "supervisor.json").exists() else {}
            hub.kill()
        with sqlite3.connect(data / "atrium.sqlite3") as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
