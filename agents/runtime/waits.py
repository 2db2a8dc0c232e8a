"""When a parked `await` has something to return: its jobs ended or its time is up.

Shared by the step loop's host (before parking) and beat's sweep (to wake a parked
session as soon as its jobs end, without a worker polling).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.tools.jobs import JobRegistry


def jobs_ready(jobs_dir: Path, arguments: dict[str, Any]) -> bool:
    """Would `await` with these arguments return at once (its jobs have all ended)?

    No handles means every job whose result was not delivered yet. Unknown handles
    count as ready: the await then fails at once with a useful error. With nothing to
    wait for, a plain timer (`seconds`) waits for its deadline and anything else is ready.
    """
    registry = JobRegistry(jobs_dir)
    known = set(registry.handles())
    targets = arguments.get("handles") or [h for h in known if not registry.delivered(h)]
    if not targets:
        return arguments.get("seconds") is None
    return all(h not in known or registry.status(h).done for h in targets)
