"""Run only by tests/test_interrupt.py (its name is not collected otherwise): a test that
holds a real Celery worker and waits, for Ctrl-C to come."""

from __future__ import annotations

import os
import time
from pathlib import Path


def test_holds_a_worker_and_waits(hub_workers):
    worker = hub_workers()
    Path(os.environ["ATRIUM_INTERRUPT_READY"]).write_text(str(worker.hub_process.process.pid))
    time.sleep(300)
