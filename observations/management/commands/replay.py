"""python manage.py replay PATH... | python manage.py replay compare A.json B.json

Replays recorded agent trajectories through the context gateway under each eviction
policy and window and reports tokens sent, the cost index with provider prompt
caching, folds, receipts and the deadlock counters (docs/replay.md). Needs no database:
no system checks run and nothing is queried.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from observations.replay.eval.chart import ChartError, draw_chart, pyplot
from observations.replay.eval.compare import compare, render_comparison
from observations.replay.eval.cost import MIN_CACHEABLE_TOKENS, PRICES
from observations.replay.eval.engine import DEFAULT_OUTPUT_BUDGET, POLICIES, ReplaySettings
from observations.replay.eval.report import markdown, render, window_label
from observations.replay.eval.results import ResultSet, ResultsFormatError
from observations.replay.eval.runner import evaluate, with_baseline
from observations.signals import replay_compared

DEFAULT_WINDOWS = "32k,64k,128k"
COMPARE = "compare"


def parse_windows(text: str) -> list[int]:
    windows = []
    for item in text.split(","):
        raw = item.strip().lower()
        scale = {"k": 1_000, "m": 1_000_000}.get(raw[-1:], 1)
        digits = raw[:-1] if scale != 1 else raw
        if not digits.isdigit() or int(digits) * scale <= 0:
            raise CommandError(
                f"--window: {item.strip()!r} is not a token count such as 32k or 128000"
            )
        windows.append(int(digits) * scale)
    return list(dict.fromkeys(windows))


def parse_policies(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    try:
        return with_baseline(names)
    except ValueError as exc:
        raise CommandError(f"--policy: {exc}") from exc


class Command(BaseCommand):
    help = (
        "Replay recorded agent trajectories through the context gateway per eviction policy "
        "and window; `replay compare A.json B.json` labels what changed between two result sets."
    )
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths",
            nargs="+",
            help="trajectory files or directories; or `compare A.json B.json`",
        )
        parser.add_argument(
            "--policy",
            default=",".join(POLICIES),
            help=f"comma-separated, from {', '.join(POLICIES)} (none is always included)",
        )
        parser.add_argument(
            "--window", default=DEFAULT_WINDOWS, help="comma-separated window sizes"
        )
        parser.add_argument(
            "--output-budget",
            type=int,
            default=DEFAULT_OUTPUT_BUDGET,
            help="max_tokens requested per call; lowers the ceiling",
        )
        parser.add_argument(
            "--json", dest="json_path", help="write all results per trajectory here"
        )
        parser.add_argument("--markdown", dest="markdown_path", help="write the tables as Markdown here")
        parser.add_argument("--chart", dest="chart_path", help="draw tokens sent per step (PNG)")
        parser.add_argument("--chart-trajectory", help="trajectory id or source/id for --chart")
        parser.add_argument(
            "--prices", choices=sorted(PRICES), default="anthropic",
            help="a provider's published cache and output multipliers (cost.PRICES); the "
                 "gateway decides and is billed with them",
        )
        parser.add_argument("--price-cache-read", type=float, help="override the preset's cache-read multiplier")
        parser.add_argument("--price-cache-write", type=float, help="override the preset's cache-write multiplier")
        parser.add_argument(
            "--price-output", type=float,
            help="override the weight of an output token, in uncached input tokens",
        )
        parser.add_argument("--no-ledger", action="store_true",
                            help="compare: do not store the verdicts in the eval ledger (needs no database)")
        parser.add_argument("--min-cacheable", type=int,
                            help=f"requests below it are not cached (default {MIN_CACHEABLE_TOKENS:,})")
        parser.add_argument("--working-set-steps", type=int,
                            help="the gateway's working-set guard: steps a changed file stays guarded (0: off)")
        parser.add_argument("--optional-min-freed", type=float,
                            help="the least an optional fold frees, as a share of min_freed (0: off)")

    def handle(self, *args: Any, **options: Any) -> None:
        out = options.get("stdout") or sys.stdout
        err = options.get("stderr") or sys.stderr
        console = Console(file=out, width=None if _is_tty(out) else 400, highlight=False)
        paths: list[str] = options["paths"]
        if paths[0] == COMPARE:
            self._compare(paths[1:], console, ledger=not options["no_ledger"])
            return
        policies = parse_policies(options["policy"])
        windows = parse_windows(options["window"])
        settings = replay_settings(options, windows)
        check_outputs(options)
        results = self._run(paths, policies, windows, settings, err)
        render(results, console)
        if not results.trajectories:
            raise CommandError("no trajectory could be read from the paths given")
        write_outputs(results, options, console)

    def _run(
        self,
        paths: list[str],
        policies: list[str],
        windows: list[int],
        settings: ReplaySettings,
        err: Any,
    ) -> ResultSet:
        progress = Progress(
            TextColumn("replaying"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeRemainingColumn(),
            console=Console(file=err),
            disable=not _is_tty(err),
            transient=True,
        )
        with progress:
            task = progress.add_task("", total=None)
            return evaluate(
                paths,
                policies=policies,
                windows=windows,
                settings=settings,
                on_loaded=lambda count: progress.update(task, total=count),
                progress=lambda t: progress.update(task, advance=1, description=t.trajectory_id),
            )

    def _compare(self, paths: list[str], console: Console, *, ledger: bool) -> None:
        if len(paths) != 2:
            raise CommandError("usage: replay compare A.json B.json")
        try:
            a, b = (ResultSet.read(path) for path in paths)
        except ResultsFormatError as exc:
            raise CommandError(str(exc)) from exc
        comparison = compare(a, b)
        render_comparison(comparison, console, names=(paths[0], paths[1]))
        if ledger:
            verdicts = [(f"{v.key} {v.policy} {window_label(v.window)}", v.label, v.reason)
                        for v in comparison.verdicts]
            try:
                answers = replay_compared.send(sender=self.__class__, a_label=str(Path(paths[0]).resolve()),
                                               b_label=str(Path(paths[1]).resolve()), verdicts=verdicts)
            except DatabaseError as exc:
                raise CommandError(f"The comparison is above, but its verdicts could not be stored in the eval "
                                   f"ledger ({str(exc).strip()}): run `manage.py migrate` first, or pass "
                                   "--no-ledger.") from None
            stored = sum(count for _, count in answers if isinstance(count, int))
            console.print(f"{stored} verdict(s) stored in the eval ledger")


def replay_settings(options: dict[str, Any], windows: list[int]) -> ReplaySettings:
    if options["output_budget"] < 0:
        raise CommandError("--output-budget must not be negative")
    try:
        preset = PRICES[options["prices"]]
        overrides = {field: options[f"price_{field}"] for field in ("cache_read", "cache_write", "output")
                     if options[f"price_{field}"] is not None}
        if options["min_cacheable"] is not None:
            overrides["min_cacheable"] = options["min_cacheable"]
        cost = replace(preset, **overrides)
        budget = tuple((field, options[field]) for field in ("working_set_steps", "optional_min_freed")
                       if options.get(field) is not None)
        settings = ReplaySettings(output_budget=options["output_budget"], cost=cost, budget=budget)
        for window in windows:
            settings.budget_for(window)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    return settings


def check_outputs(options: dict[str, Any]) -> None:
    """Before the replay, which may take minutes: every output can be written."""
    for flag in ("json_path", "chart_path", "markdown_path"):
        target = options[flag]
        if target and not Path(target).resolve().parent.is_dir():
            raise CommandError(
                f"--{flag.removesuffix('_path')}: no such directory for {target}"
            )
    if options["chart_path"]:
        try:
            pyplot()
        except ChartError as exc:
            raise CommandError(f"--chart: {exc}") from exc


def write_outputs(results: ResultSet, options: dict[str, Any], console: Console) -> None:
    if options["chart_path"]:
        try:
            chosen = draw_chart(
                results, options["chart_path"], trajectory=options["chart_trajectory"]
            )
        except ChartError as exc:
            raise CommandError(f"--chart: {exc}") from exc
        console.print(f"chart of {chosen.key} written to {options['chart_path']}")
    if options["json_path"]:
        _write_atomically(results, Path(options["json_path"]))
        console.print(f"results written to {options['json_path']}")
    if options["markdown_path"]:
        Path(options["markdown_path"]).write_text(markdown(results), encoding="utf-8")
        console.print(f"tables written to {options['markdown_path']}")


def _is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _write_atomically(results: ResultSet, path: Path) -> None:
    """Whole file or nothing: a failed write leaves no half-written JSON behind."""
    handle, temporary = tempfile.mkstemp(
        prefix=".replay-", suffix=".json", dir=path.resolve().parent
    )
    os.close(handle)
    try:
        results.write(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
