"""`--chart`: tokens sent per step for one trajectory, one line per policy, one panel
per window, with the trigger and ceiling marked."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from observations.replay.eval.report import window_label
from observations.replay.eval.results import ResultSet, TrajectoryResult


class ChartError(ValueError):
    pass


def pyplot() -> ModuleType:
    """matplotlib is the `chart` extra, not a production dependency: it is imported here,
    when a chart is drawn, never by a replay that draws none."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ChartError(
            "drawing a chart needs matplotlib: install the `chart` extra "
            "(pip install -e '.[chart]')"
        ) from exc
    matplotlib.use("Agg")  # files only; no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def pick_trajectory(results: ResultSet, wanted: str | None) -> TrajectoryResult:
    """``wanted`` matches a key (``source/id``), an id or a path; by default the run
    where on_demand folded most (ties: the longest), the one that shows most."""
    if not results.trajectories:
        raise ChartError("no trajectory was replayed, nothing to draw")
    if wanted:
        for t in results.trajectories:
            if wanted in (t.key, t.trajectory_id, t.path):
                return t
        raise ChartError(f"no replayed trajectory is called {wanted!r}")

    def interest(t: TrajectoryResult) -> tuple[int, int]:
        folds = sum(r.folds for (policy, _), r in t.totals.items() if policy == "on_demand")
        return folds, t.steps

    return max(results.trajectories, key=interest)


def draw_chart(
    results: ResultSet, path: str | Path, *, trajectory: str | None = None
) -> TrajectoryResult:
    plt = pyplot()
    chosen = pick_trajectory(results, trajectory)
    windows = results.windows
    figure, axes = plt.subplots(
        len(windows), 1, figsize=(10, 3.6 * len(windows)), squeeze=False, sharex=True
    )
    for axis, window in zip(axes[:, 0], windows, strict=True):
        marks = None
        for policy in results.policies:
            series = chosen.requests.get((policy, window))
            if series is None:
                continue
            marks = series
            steps = range(len(series["sent"]))
            (line,) = axis.plot(steps, series["sent"], label=policy, linewidth=1.3)
            if policy == "on_demand" and series["folds"]:
                # eager and mask-last-5 fold at nearly every step; on_demand's are the news.
                folds = series["folds"]
                axis.plot(
                    folds,
                    [series["sent"][i] for i in folds],
                    "v",
                    color=line.get_color(),
                    markersize=6,
                )
            if chosen.totals[(policy, window)].failed and series["sent"]:
                last = len(series["sent"]) - 1
                axis.plot(last, series["sent"][last], "X", color=line.get_color(), markersize=9)
        if marks is not None:
            axis.axhline(
                marks["trigger"], color="0.45", linestyle="--", linewidth=1, label="trigger"
            )
            axis.axhline(
                marks["ceiling"], color="black", linestyle=":", linewidth=1.3, label="ceiling"
            )
        axis.set_ylim(bottom=0)
        axis.set_title(f"{window_label(window)} window", fontsize=10)
        axis.set_ylabel("tokens sent")
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step (model request)")
    axes[0, 0].legend(fontsize=8, ncol=4, loc="lower right")
    figure.suptitle(
        f"{chosen.key} ({chosen.model}); ▼ on_demand fold, X run stopped (too large)",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return chosen
