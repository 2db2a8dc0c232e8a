"""The replay evaluator: recorded trajectories through the context gateway, per policy
and window: what the requests would have cost and whether the agent would have been
trapped. Plain Python, no database; `python manage.py replay` is its command line and
docs/replay.md its manual.

One job per module: `engine` replays one run, `cost` prices requests, `reads` counts
re-reads and denials, `calibration` checks the token estimate, `runner` replays a set,
`results` holds and (de)serialises them, `summary` totals them, `report` prints the
tables, `compare` labels the differences between two result sets, `chart` draws one run.
"""

from observations.replay.eval.cost import CostModel
from observations.replay.eval.engine import POLICIES, ReplaySettings, RunResult, replay
from observations.replay.eval.results import ResultSet
from observations.replay.eval.runner import evaluate

__all__ = [
    "POLICIES",
    "CostModel",
    "ReplaySettings",
    "ResultSet",
    "RunResult",
    "evaluate",
    "replay",
]
