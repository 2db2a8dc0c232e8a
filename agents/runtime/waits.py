"""When a parked session has something to look at: the jobs it waits for ended.

The worker asks before parking; beat's sweep asks every few seconds to wake a parked
session as soon as its jobs end, die or go silent. Both judge a job the same way
(agents.tools.jobs): a result file, a wrapper process gone (probed on its own machine,
by its stopped heartbeat elsewhere), or no output for the silence limit.
"""

from __future__ import annotations

from typing import Any

from agents.tools.jobs import JobRegistry


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
