"""Totals per policy and window (and per source) over a result set.

Ratios to `none` are taken over every run of a window: no run is ever dropped. A run a
policy had to stop (ContextTooLarge: only a policy without segments can) counts with
what it sent until it stopped, which flatters it, so stopped runs have their own
column and a policy that stops any is marked in the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from observations.replay.eval.results import ResultSet, RunTotals

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
    segments: int
    payload_receipts: int
    cache_read_full_write: int | None
    sent_ratio: float | None  # to none, over every run
    cost_ratio: float | None  # fold requests read their unchanged start from the cache
    cost_ratio_full_write: float | None  # fold requests written to the cache whole
    input_ratio: float | None  # the same two, input only (output left out)
    input_ratio_full_write: float | None
    # The fidelity proxy (reads.py): results taken out and needed again.
    needed: int | None = None
    needed_tokens: int | None = None
    needed_steps: int | None = None

    @property
    def needed_steps_mean(self) -> float | None:
        return None if not self.needed or self.needed_steps is None else self.needed_steps / self.needed

    @property
    def cache_read_share(self) -> float:
        return self.cache_read / self.sent if self.sent else 0.0

    @property
    def cache_read_share_full_write(self) -> float | None:
        if self.cache_read_full_write is None:
            return None
        return self.cache_read_full_write / self.sent if self.sent else 0.0


def summarize(results: ResultSet, *, source: str | None = None) -> list[SummaryRow]:
    trajectories = [t for t in results.trajectories if source is None or t.source == source]
    rows = []
    for window in results.windows:
        base = [t.totals[(BASELINE, window)] for t in trajectories if (BASELINE, window) in t.totals]
        base_sent = sum(r.sent for r in base)
        base_cost = sum(r.cost for r in base)
        base_input = sum(r.input_cost for r in base)
        for policy in results.policies:
            runs = [
                t.totals[(policy, window)] for t in trajectories if (policy, window) in t.totals
            ]
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
                    segments=_total(runs, "segments"),
                    payload_receipts=_total(runs, "payload_receipts"),
                    cache_read_full_write=_total_or_none(runs, "cache_read_full_write"),
                    sent_ratio=_ratio(_total(runs, "sent"), base_sent),
                    cost_ratio=_ratio(sum(r.cost for r in runs), base_cost),
                    cost_ratio_full_write=_ratio(_total_or_none(runs, "cost_full_write"), base_cost),
                    input_ratio=_ratio(sum(r.input_cost for r in runs), base_input),
                    input_ratio_full_write=_ratio(_total_or_none(runs, "input_cost_full_write"), base_input),
                    needed=_total_or_none(runs, "needed"),
                    needed_tokens=_total_or_none(runs, "needed_tokens"),
                    needed_steps=_total_or_none(runs, "needed_steps"),
                )
            )
    return rows


def _ratio(value: float | None, base: float) -> float | None:
    return value / base if base and value is not None else None


def _total_or_none(runs: list[RunTotals], name: str) -> float | None:
    """A total that older results files do not have (None there)."""
    values = [getattr(r, name) for r in runs]
    return None if any(v is None for v in values) else sum(values)


def _total(runs: list[RunTotals], name: str) -> int:
    return sum(getattr(r, name) for r in runs)
