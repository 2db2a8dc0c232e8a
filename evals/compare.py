"""`eval compare A B`: two eval batches lined up by scenario, one verdict each.

Plain Python over plain run facts. A verdict is one of:

- **confounded**: the two sides differ in something other than the hub (another model,
  another version of the scenario), or a side has too few judged runs (a real model
  needs ``MIN_RUNS_REAL`` per side: its runs vary; a scripted one is deterministic);
- **helped** / **hurt**: B's share of passed checks is at least ``MARGIN`` above / below
  A's (request and behaviour checks together, over every judged run);
- **no observed effect**: within the margin.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

HELPED, HURT, NO_EFFECT, CONFOUNDED = "helped", "hurt", "no observed effect", "confounded"
MIN_RUNS_REAL = 3
MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class RunFacts:
    scenario: str
    version: str
    model: str
    scripted: bool
    state: str  # passed, failed, error, skipped
    passed: int  # checks passed (request + behaviour)
    total: int


@dataclass(frozen=True, slots=True)
class Verdict:
    subject: str
    verdict: str
    detail: str


def share(runs: list[RunFacts]) -> float:
    total = sum(r.total for r in runs)
    return sum(r.passed for r in runs) / total if total else 0.0


def judge(a: list[RunFacts], b: list[RunFacts]) -> tuple[str, str]:
    a = [r for r in a if r.state != "skipped"]
    b = [r for r in b if r.state != "skipped"]
    if not a or not b:
        return CONFOUNDED, f"too few runs: A has {len(a)} judged, B has {len(b)}"
    models = ({r.model for r in a}, {r.model for r in b})
    if models[0] != models[1]:
        return CONFOUNDED, f"different models: A {sorted(models[0])}, B {sorted(models[1])}"
    versions = ({r.version for r in a}, {r.version for r in b})
    if versions[0] != versions[1]:
        return CONFOUNDED, f"different scenario versions: A {sorted(versions[0])}, B {sorted(versions[1])}"
    needed = 1 if all(r.scripted for r in a + b) else MIN_RUNS_REAL
    if len(a) < needed or len(b) < needed:
        return CONFOUNDED, f"too few runs: A has {len(a)}, B has {len(b)}, a real model needs {needed} each"
    sa, sb = share(a), share(b)
    detail = f"checks passed: A {sa:.0%} of {sum(r.total for r in a)}, B {sb:.0%} of {sum(r.total for r in b)}"
    if sb - sa >= MARGIN:
        return HELPED, detail
    if sa - sb >= MARGIN:
        return HURT, detail
    return NO_EFFECT, detail


def compare(a: list[RunFacts], b: list[RunFacts]) -> list[Verdict]:
    by_a: dict[str, list[RunFacts]] = defaultdict(list)
    by_b: dict[str, list[RunFacts]] = defaultdict(list)
    for run in a:
        by_a[run.scenario].append(run)
    for run in b:
        by_b[run.scenario].append(run)
    verdicts = []
    for scenario in sorted(set(by_a) | set(by_b)):
        verdict, detail = judge(by_a.get(scenario, []), by_b.get(scenario, []))
        verdicts.append(Verdict(scenario, verdict, detail))
    return verdicts
