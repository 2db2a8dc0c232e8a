"""`replay compare A.json B.json`: what changed from result set A to result set B.

Runs are aligned by trajectory (source and id), policy and window, and each pair gets
one label:

* confounded: the pair does not measure the same thing: a different model, different
  inputs (the trajectory's fingerprint), or different measurement settings (output
  budget, prices, token estimator). Gateway defaults are the treatment, not a
  confounder.
* hurt: B failed where A did not, or B has more denied re-reads or more requests over
  the ceiling; otherwise B's cost index is higher by at least the threshold.
* helped: the reverse.
* no observed effect: none of the above (cost within the threshold either way, or
  both runs failed).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from observations.replay.eval.report import window_label
from observations.replay.eval.results import ResultSet, RunTotals, TrajectoryResult

HELPED, HURT, NO_EFFECT, CONFOUNDED = "helped", "hurt", "no observed effect", "confounded"
LABELS = (HELPED, HURT, NO_EFFECT, CONFOUNDED)
COST_THRESHOLD_PCT = 1.0  # relative change of a run's cost index
MEASUREMENT_SETTINGS = ("output_budget", "cost", "estimator")
THRESHOLDS = (
    f"thresholds: helped/hurt when a run's cost index changes by at least "
    f"{COST_THRESHOLD_PCT:g}% (B vs A), or when failures, denied re-reads or requests over "
    "the ceiling change (any change; these decide first); confounded when the model, the "
    f"trajectory's fingerprint or the measurement settings ({', '.join(MEASUREMENT_SETTINGS)}) differ."
)


@dataclass(frozen=True, slots=True)
class Verdict:
    key: str
    policy: str
    window: int
    label: str
    reason: str
    cost_a: float
    cost_b: float

    @property
    def change_pct(self) -> float | None:
        return 100.0 * (self.cost_b - self.cost_a) / self.cost_a if self.cost_a else None


@dataclass(slots=True)
class Comparison:
    verdicts: list[Verdict] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(v.label for v in self.verdicts)


def compare(a: ResultSet, b: ResultSet) -> Comparison:
    settings_differ = [
        name for name in MEASUREMENT_SETTINGS if a.settings.get(name) != b.settings.get(name)
    ]
    by_key_b = {t.key: t for t in b.trajectories}
    comparison = Comparison()
    for ta in a.trajectories:
        tb = by_key_b.pop(ta.key, None)
        if tb is None:
            comparison.only_a.append(ta.key)
            continue
        for run_key, run_a in ta.totals.items():
            run_b = tb.totals.get(run_key)
            if run_b is not None:
                comparison.verdicts.append(judge(ta, tb, run_a, run_b, settings_differ))
    comparison.only_b.extend(by_key_b)
    return comparison


def judge(
    ta: TrajectoryResult,
    tb: TrajectoryResult,
    a: RunTotals,
    b: RunTotals,
    settings_differ: list[str],
) -> Verdict:
    def verdict(label: str, reason: str) -> Verdict:
        return Verdict(ta.key, a.policy, a.window, label, reason, a.cost, b.cost)

    if ta.model != tb.model:
        return verdict(CONFOUNDED, f"model {ta.model} vs {tb.model}")
    if ta.fingerprint != tb.fingerprint:
        return verdict(CONFOUNDED, "the trajectory's inputs differ (fingerprint)")
    if settings_differ:
        return verdict(CONFOUNDED, f"settings differ: {', '.join(settings_differ)}")
    worse, better = _safety(a, b), _safety(b, a)
    if worse:
        return verdict(HURT, "; ".join(worse))
    if better:
        return verdict(HELPED, "; ".join(better))
    if a.failed and b.failed:
        return verdict(NO_EFFECT, "both runs failed")
    change = 100.0 * (b.cost - a.cost) / a.cost if a.cost else 0.0
    if change <= -COST_THRESHOLD_PCT:
        return verdict(HELPED, f"cost index {change:+.1f}%")
    if change >= COST_THRESHOLD_PCT:
        return verdict(HURT, f"cost index {change:+.1f}%")
    return verdict(NO_EFFECT, f"cost index {change:+.1f}%")


def _safety(before: RunTotals, after: RunTotals) -> list[str]:
    """What got worse from ``before`` to ``after``."""
    reasons = []
    if after.failed and not before.failed:
        reasons.append("the run failed")
    if after.denied_rereads > before.denied_rereads:
        reasons.append(f"denied re-reads {before.denied_rereads} → {after.denied_rereads}")
    if after.over_ceiling > before.over_ceiling:
        reasons.append(f"requests over the ceiling {before.over_ceiling} → {after.over_ceiling}")
    return reasons


def render_comparison(comparison: Comparison, console: Console, *, names: tuple[str, str]) -> None:
    console.print(f"A = {names[0]}\nB = {names[1]}")
    console.print(THRESHOLDS)
    groups: dict[tuple[str, int], list[Verdict]] = {}
    for v in comparison.verdicts:
        groups.setdefault((v.policy, v.window), []).append(v)
    table = Table(title="Per policy and window", title_justify="left", pad_edge=False)
    for name in ("window", "policy", "runs", *LABELS, "cost A", "cost B", "change"):
        table.add_column(name, justify="left" if name in ("window", "policy") else "right")
    for (policy, window), verdicts in sorted(
        groups.items(), key=lambda item: (item[0][1], item[0][0])
    ):
        counts = Counter(v.label for v in verdicts)
        # Cost totals over the pairs that measure the same thing.
        comparable = [v for v in verdicts if v.label != CONFOUNDED]
        cost_a = sum(v.cost_a for v in comparable)
        cost_b = sum(v.cost_b for v in comparable)
        change = f"{100.0 * (cost_b - cost_a) / cost_a:+.2f}%" if cost_a else "—"
        table.add_row(
            window_label(window),
            policy,
            str(len(verdicts)),
            *(str(counts[label]) for label in LABELS),
            f"{cost_a:,.0f}",
            f"{cost_b:,.0f}",
            change,
        )
    console.print(table)
    notable = [v for v in comparison.verdicts if v.label != NO_EFFECT]
    if notable:
        details = Table(
            title="Runs with an effect or a confounder", title_justify="left", pad_edge=False
        )
        for name in ("trajectory", "window", "policy", "label", "why"):
            details.add_column(name)
        for v in notable:
            details.add_row(v.key, window_label(v.window), v.policy, v.label, v.reason)
        console.print(details)
    for key in comparison.only_a:
        console.print(f"only in A: {key}")
    for key in comparison.only_b:
        console.print(f"only in B: {key}")
    counts = comparison.counts()
    console.print(
        f"totals: {len(comparison.verdicts)} runs compared: "
        + ", ".join(f"{counts[label]} {label}" for label in LABELS)
        + f"; {len(comparison.only_a)} trajectories only in A, {len(comparison.only_b)} only in B"
    )
