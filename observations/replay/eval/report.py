"""The replay's tables, rendered with rich."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from observations.replay.eval.oracle import LIMITS
from observations.replay.eval.results import ResultSet
from observations.replay.eval.summary import SummaryRow, summarize

COLUMNS = (
    ("window", "left"),
    ("policy", "left"),
    ("runs", "right"),
    ("stopped", "right"),
    ("requests", "right"),
    ("sent ×none", "right"),
    ("cache-read", "right"),
    ("cost ×none", "right"),
    ("cost ×none, fold reads start", "right"),
    ("input ×none", "right"),
    ("input ×none, fold reads start", "right"),
    ("folds", "right"),
    ("payload receipts", "right"),
    ("segments", "right"),
    ("receipts", "right"),
    ("re-reads after eviction", "right"),
    ("denied re-reads", "right"),
    ("needed again", "right"),
    ("their tokens", "right"),
    ("steps after leaving", "right"),
    ("over ceiling", "right"),
)


def window_label(window: int) -> str:
    return f"{window // 1000}k" if window % 1000 == 0 else f"{window:,}"


def summary_table(rows: list[SummaryRow], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, overflow="fold")
    best = _cheapest_by_window(rows)
    previous_window = None
    for row in rows:
        if previous_window is not None and row.window != previous_window:
            table.add_section()
        previous_window = row.window
        cost = _ratio(row.cost_ratio_full_write)
        table.add_row(
            window_label(row.window),
            row.policy,
            f"{row.runs}",
            Text(f"{row.failed}", style="bold red" if row.failed else ""),
            f"{row.steps:,}",
            _ratio(row.sent_ratio),
            _share(row.cache_read_share_full_write),
            Text(cost, style="bold green") if best.get(row.window) == row.policy else cost,
            _ratio(row.cost_ratio),
            _ratio(row.input_ratio_full_write),
            _ratio(row.input_ratio),
            f"{row.folds:,}",
            f"{row.payload_receipts:,}",
            f"{row.segments:,}",
            f"{row.receipts:,}",
            f"{row.rereads_after_eviction:,}",
            Text(f"{row.denied_rereads:,}", style="bold red" if row.denied_rereads else ""),
            *_fidelity(row),
            Text(f"{row.over_ceiling:,}", style="red" if row.over_ceiling else ""),
        )
    return table


def handoff_table(results: ResultSet, *, resets_shown: int = 10) -> Table | None:
    """Handoff sizes across resets: the k-th handoff of every run that reset k times."""
    series: dict[tuple[int, str], list[tuple[int, ...]]] = {}
    for trajectory in results.trajectories:
        for (policy, window), totals in trajectory.totals.items():
            if totals.handoff_bytes:
                series.setdefault((window, policy), []).append(totals.handoff_bytes)
    if not series:
        return None
    table = Table(title="Handoff bytes by reset (median / max over the runs that reset that often)",
                  title_justify="left", pad_edge=False)
    table.add_column("window")
    table.add_column("policy")
    table.add_column("runs reset", justify="right")
    for k in range(1, resets_shown + 1):
        table.add_column(f"#{k}", justify="right")
    for (window, policy), runs in sorted(series.items()):
        cells = []
        for k in range(resets_shown):
            sizes = sorted(run[k] for run in runs if len(run) > k)
            cells.append(f"{sizes[len(sizes) // 2]:,} / {sizes[-1]:,}" if sizes else "")
        table.add_row(window_label(window), policy, f"{len(runs)}", *cells)
    return table


def render(results: ResultSet, console: Console) -> None:
    runs = len(results.trajectories)
    steps = sum(t.steps for t in results.trajectories)
    for problem in results.problems:
        console.print(Text(f"skipped {problem.path}: {problem.reason}", style="yellow"))
    console.print(
        f"Replayed {runs} trajectories ({steps:,} recorded steps); "
        f"{len(results.problems)} file(s) skipped."
    )
    console.print(summary_table(summarize(results), "All sources"))
    handoffs = handoff_table(results)
    if handoffs is not None:
        console.print(handoffs)
    sources = sorted({t.source for t in results.trajectories})
    if len(sources) > 1:
        for source in sources:
            console.print(summary_table(summarize(results, source=source), f"Source: {source}"))
    console.print(Group(*(Text(line) for line in notes(results))))


def notes(results: ResultSet) -> list[str]:
    settings = results.settings
    cost = settings["cost"]
    gateway = settings["gateway"]
    lines = [
        "×none ratios are over every run; a stopped run (what it cannot evict exceeds the ceiling "
        "and it has no segments) counts what it sent until it stopped.",
        f"cost index ({settings.get('prices', 'custom')} prices) = uncached × 1.0 + cache-read × "
        f"{cost['cache_read']} + cache-write × {cost['cache_write']} + output × {cost['output']}; requests "
        f"under {cost['min_cacheable']:,} tokens are not cached. Output budget {settings['output_budget']:,} tokens.",
        "cost ×none and cache-read: every fold request (and a new segment's first) charged as a cache "
        "write whole; 'fold reads start': its unchanged start read from the cache (a breakpoint before the "
        "first receipt). input ×none leaves output out.",
        f"on_demand: folds when it pays (economics.py), trigger {gateway['trigger_ratio']:.0%}, mandatory "
        f"folds to {gateway['target_ratio']:.0%} freeing ≥ {gateway['min_freed_tokens']:,} (≤ window/8), "
        f"new segment past {gateway.get('segment_ratio', 0.6):.0%} not foldable; oracle: the cheapest fold "
        "schedule in hindsight (oracle.py).",
    ]
    if results.estimator is not None:
        lines.append(results.estimator.describe())
    else:
        lines.append("token estimate: no full-history run with provider counts to check it against")
    return lines


def _fidelity(row: SummaryRow) -> tuple[str, str, str]:
    """Needed again: how many results, their tokens, the mean steps after they left."""
    if row.needed is None:
        return "—", "—", "—"
    steps = row.needed_steps_mean
    return f"{row.needed:,}", f"{row.needed_tokens or 0:,}", "—" if steps is None else f"{steps:.1f}"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _cheapest_by_window(rows: list[SummaryRow]) -> dict[int, str]:
    best: dict[int, tuple[float, str]] = {}
    for row in rows:
        if row.policy in LIMITS:  # the limits, not contenders
            continue
        if row.cost_ratio_full_write is not None and (
            row.window not in best or row.cost_ratio_full_write < best[row.window][0]
        ):
            best[row.window] = (row.cost_ratio_full_write, row.policy)
    return {window: policy for window, (_, policy) in best.items()}


MARKDOWN_COLUMNS = ("window", "policy", "runs", "stopped", "cost ×none", "fold reads start", "input ×none",
                    "input, fold reads start", "cache-read", "folds", "payload receipts", "segments",
                    "re-reads after eviction", "denied re-reads", "needed again", "their tokens",
                    "steps after leaving", "over ceiling")


def markdown(results: ResultSet) -> str:
    """The summary tables as Markdown (all sources, then per source), for docs/replay.md."""
    out = []
    sources = [None] + sorted({t.source for t in results.trajectories})
    for source in sources:
        out.append(f"\n**{source or 'All sources'}**\n")
        out.append("| " + " | ".join(MARKDOWN_COLUMNS) + " |")
        out.append("|" + "---|" * 2 + "--:|" * (len(MARKDOWN_COLUMNS) - 2))
        for row in summarize(results, source=source):
            cells = (window_label(row.window), row.policy, row.runs, row.failed, _ratio(row.cost_ratio_full_write),
                     _ratio(row.cost_ratio), _ratio(row.input_ratio_full_write), _ratio(row.input_ratio),
                     _share(row.cache_read_share_full_write), f"{row.folds:,}", f"{row.payload_receipts:,}",
                     f"{row.segments:,}", f"{row.rereads_after_eviction:,}", f"{row.denied_rereads:,}",
                     *_fidelity(row), f"{row.over_ceiling:,}")
            out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out) + "\n"
