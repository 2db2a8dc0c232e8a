"""When a parked session has something to look at: the jobs it waits for ended.

The worker asks before parking, and then watches the jobs from a thread of its process
(``watch_jobs``): a job's end wakes the session at once. Beat's sweep asks every few
seconds too, for when that worker is gone. Both judge a job the same way
(agents.tools.jobs): a result file, a wrapper process gone (probed on its own machine;
elsewhere, its journal's beat stopped: agents.tools.journaled_jobs), or no output for the
silence limit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection

from agents.tools.jobs import JobRegistry, look_interval
from agents.tools.registry import WAITS

log = logging.getLogger(__name__)

WATCH_POLL_SECONDS = 0.25  # the least pause between two looks of a watch


def jobs_ready(registry: JobRegistry, arguments: dict[str, Any]) -> bool:
    """Would `await` with these arguments return at once (its jobs have all ended)?

    No handles means every job whose result was not delivered yet. Unknown handles
    count as ready: the await then fails at once with a useful error. With nothing to
    wait for, a plain timer (`seconds`) waits for its deadline and anything else is ready.
    """
    known = set(registry.handles())
    targets = arguments.get("handles") or [h for h in known if not registry.delivered(h)]
    if not targets:
        return arguments.get("seconds") is None
    return all(h not in known or registry.status(h).done for h in targets)


def awaited(runtime: dict[str, Any]) -> dict[str, Any] | None:
    """The `await` arguments a parked session waits on (its held jobs count as one), or
    None when it waits for no job."""
    if held := runtime.get("held_jobs"):
        return {"handles": held}  # held at its end until its jobs end (obligations.py)
    calls, index = runtime.get("calls") or [], runtime.get("next_call", 0)
    if index < len(calls) and calls[index].get("name") in WAITS:
        return calls[index].get("arguments") or {}
    return None


def watch_jobs(registry: JobRegistry, arguments: dict[str, Any], *, until: float,
               wake: Callable[[], object]) -> threading.Thread:
    """Call ``wake`` once the awaited jobs are ready, from a daemon thread that gives up
    at ``until`` (time.time()), when the session's own wake time comes anyway. The jobs
    are found once (their journal may be asked) and then watched in their folders alone,
    so the thread holds no database connection while it waits; jobs of another machine
    are left to beat's sweep."""
    def watch() -> None:
        try:
            if jobs_ready(registry, arguments):
                wake()
                return
            targets = arguments.get("handles") or [h for h in registry.handles() if not registry.delivered(h)]
            if not targets or not all(registry.exists(handle) for handle in targets):
                return  # a plain timer, or jobs elsewhere
            folders = JobRegistry(registry.directory, silence_limit_seconds=registry.silence_limit_seconds)
            connection.close()
            started = time.monotonic()
            while time.time() < until:
                if all(folders.status(handle).done for handle in targets):
                    wake()
                    return
                time.sleep(look_interval(time.monotonic() - started, least=WATCH_POLL_SECONDS))
        except Exception:  # beat's sweep wakes it instead
            log.exception("watching a parked session's jobs failed")
        finally:
            connection.close()

    thread = threading.Thread(target=watch, daemon=True, name="job-watch")
    thread.start()
    return thread
