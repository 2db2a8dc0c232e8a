"""When a parked `await` has something to return: its jobs ended or its time is up.

The worker asks before parking (probing its own jobs' processes); beat's sweep asks to
wake a parked session as soon as its jobs end, and only reads: beat may run on another
machine than the jobs, so it never judges a silent job dead, it waits for the result
file a job's wrapper (or a worker) writes.
"""

from __future__ import annotations

from typing import Any

from agents.tools.jobs import JobRegistry


def jobs_ready(registry: JobRegistry, arguments: dict[str, Any], *, read_only: bool = False) -> bool:
    """Would `await` with these arguments return at once (its jobs have all ended)?

    No handles means every job whose result was not delivered yet. Unknown handles
    count as ready: the await then fails at once with a useful error. With nothing to
    wait for, a plain timer (`seconds`) waits for its deadline and anything else is ready.
    """
    known = set(registry.handles())
    targets = arguments.get("handles") or [h for h in known if not registry.delivered(h)]
    if not targets:
        return arguments.get("seconds") is None
    return all(h not in known or _ended(registry, h, read_only) for h in targets)


def _ended(registry: JobRegistry, handle: str, read_only: bool) -> bool:
    if read_only:
        return (registry.directory / handle / "result.json").exists()
    return registry.status(handle).done
