"""Totals per policy and window (and per source) over a result set.

Ratios to `none` are taken over the *common runs* of a window: the trajectories every
policy replayed to the end there. A run the gateway had to stop (ContextTooLarge)
sent fewer requests than the others, so counting it would flatter the policy that
failed; failed runs are reported in their own column instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from observations.replay.eval.results import ResultSet, RunTotals, TrajectoryResult

BASELINE = "none"


@dataclass(frozen=True, slots=True)
class SummaryRow:
    window: int
    policy: str
    runs: int
    failed: int
    steps: int  # requests sent
    sent: int
    cache_read: int
    cost: float
    folds: int
    receipts: int
    rereads_after_eviction: int
    denied_rereads: int
    over_ceiling: int
    over_window: int
    common_runs: int
    sent_ratio: float | None  # to none, over the common runs
    cost_ratio: float | None

    @property
    def cache_read_share(self) -> float:
        return self.cache_read / self.sent if self.sent else 0.0


def common_runs(
    trajectories: list[TrajectoryResult], policies: list[str], window: int
) -> list[TrajectoryResult]:
    return [
        t
        for t in trajectories
        if all((p, window) in t.totals and not t.totals[(p, window)].failed for p in policies)
    ]


def summarize(results: ResultSet, *, source: str | None = None) -> list[SummaryRow]:
    trajectories = [t for t in results.trajectories if source is None or t.source == source]
    rows = []
    for window in results.windows:
        common = common_runs(trajectories, results.policies, window)
        base_sent = (
            sum(t.totals[(BASELINE, window)].sent for t in common)
            if BASELINE in results.policies
            else 0
        )
        base_cost = (
            sum(t.totals[(BASELINE, window)].cost for t in common)
            if BASELINE in results.policies
            else 0.0
        )
        for policy in results.policies:
            runs = [
                t.totals[(policy, window)] for t in trajectories if (policy, window) in t.totals
            ]
            common_sent = sum(t.totals[(policy, window)].sent for t in common)
            common_cost = sum(t.totals[(policy, window)].cost for t in common)
            rows.append(
                SummaryRow(
                    window=window,
                    policy=policy,
                    runs=len(runs),
                    failed=sum(1 for r in runs if r.failed),
                    steps=_total(runs, "requests"),
                    sent=_total(runs, "sent"),
                    cache_read=_total(runs, "cache_read"),
                    cost=sum(r.cost for r in runs),
                    folds=_total(runs, "folds"),
                    receipts=_total(runs, "receipts"),
                    rereads_after_eviction=_total(runs, "rereads_after_eviction"),
                    denied_rereads=_total(runs, "denied_rereads"),
                    over_ceiling=_total(runs, "over_ceiling"),
                    over_window=_total(runs, "over_window"),
                    common_runs=len(common),
                    sent_ratio=common_sent / base_sent if base_sent else None,
                    cost_ratio=common_cost / base_cost if base_cost else None,
                )
            )
    return rows


def _total(runs: list[RunTotals], name: str) -> int:
    return sum(getattr(r, name) for r in runs)
