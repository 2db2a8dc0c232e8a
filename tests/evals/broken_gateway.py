"""A Celery app whose gateway is deliberately broken, for the test that shows the eval's
checks can fail. ``ATRIUM_TEST_BROKEN_GATEWAY`` says how:

- ``no-decisions``: the handoff's decisions section is left empty (people's words and
  the task's constraints are dropped at every reset);
- ``tool-output-in-decisions``: lines of this segment's tool results that give orders
  ("ignore …", "previous rules …") are added to the decisions.

Start a worker with ``celery -A tests.evals.broken_gateway worker``.
"""

from __future__ import annotations

import os
import re

from observations.gateway import handoff, segments

MODE = os.environ.get("ATRIUM_TEST_BROKEN_GATEWAY", "")
ORDERS = re.compile(r"ignore|previous rules", re.IGNORECASE)

if MODE == "no-decisions":
    handoff.render_decisions = lambda decisions: "(none)"
elif MODE == "tool-output-in-decisions":
    _handoff_for = segments.handoff_for

    def _leaky_handoff_for(ctx, **kwargs):
        built = _handoff_for(ctx, **kwargs)
        leaked = [line for obs in ctx.observations for line in obs.source.text.splitlines() if ORDERS.search(line)]
        if leaked:
            built.sections["decisions"] += "\n" + "\n".join(f"- (from a tool) {line}" for line in leaked[:3])
        return built

    segments.handoff_for = _leaky_handoff_for
elif MODE:
    raise SystemExit(f"unknown ATRIUM_TEST_BROKEN_GATEWAY={MODE!r}")

from hub.celery import app  # noqa: E402,F401  (the worker's app)
