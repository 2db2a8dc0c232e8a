"""`manage.py eval <scenarios…>`: long-session evals through the real runtime.

    python manage.py eval evals/scenarios/*.yaml            # scripted model, request checks
    python manage.py eval SCENARIOS --model openai:gpt-4.1 --runs 3  # a real model: behaviour too
    python manage.py eval compare A B                               # two eval batches, by scenario

Every run is stored in the eval ledger (/evals/ on the web). See docs/evals.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agents.providers.errors import InvalidModelSpec
from agents.providers.factory import check_model_spec, parse_spec
from evals.ledger import eval_compare
from evals.models import EvalBatch, EvalRun
from evals.runner import ScenarioRun, dumps, run_scenarios, run_summary, skipped_run
from evals.scenario import ScenarioError
from evals.scenario_files import load_scenario
from evals.workers import EvalWorker
from hub.embedded import EmbeddedRedis
from observations.gateway.model_spec import REMOTE_KINDS

EVAL_USER = "eval"


class Command(BaseCommand):
    help = "Run long-session eval scenarios (or `eval compare A B`)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="scenario files (YAML or JSON), or: compare A B")
        parser.add_argument("--model", default="script",
                            help="script (default: the scenario's scripted agent), openai:<model> or anthropic:<model>")
        parser.add_argument("--runs", type=int, default=None, help="runs per scenario (default 1 scripted, 3 real)")
        parser.add_argument("--json", dest="json_path", help="write the results as JSON here ('-': stdout)")
        parser.add_argument("--label", default="", help="a label for this batch in the ledger")
        parser.add_argument("--no-worker", action="store_true",
                            help="use the hub's running Celery workers instead of starting one")
        parser.add_argument("--concurrency", type=int, default=2, help="processes of the worker started")
        parser.add_argument("--timeout", type=float, default=None,
                            help="seconds one run may take (default 300 scripted, 1800 real)")
        parser.add_argument("--as", dest="username", default=EVAL_USER,
                            help="the person who owns the eval rooms and speaks in them")

    def handle(self, *args, paths: list[str], **options) -> None:
        _check_migrated()
        if paths[0] == "compare":
            return self._compare(paths[1:], options["json_path"])
        return self._run(paths, **options)

    # ------------------------------------------------------------------ eval
    def _run(self, paths: list[str], *, model: str, runs: int | None, json_path: str | None, label: str,
             no_worker: bool, concurrency: int, timeout: float | None, username: str, **_) -> None:
        scenarios = []
        problems = []
        for path in paths:
            try:
                scenarios.append(load_scenario(Path(path)))
            except ScenarioError as exc:
                problems.append(str(exc))
        if problems:
            raise CommandError("bad scenario file(s):\n" + "\n".join(problems))
        if len({s.name for s in scenarios}) != len(scenarios):
            raise CommandError("two scenarios have the same name; names key the ledger and compare")
        scripted = model == "script"
        skip = "" if scripted else self._model_unusable(model)
        runs = runs or (1 if scripted else 3)
        if runs < 1:
            raise CommandError("--runs must be at least 1")
        person = self._person(username)
        batch = EvalBatch.objects.create(label=label, model=model, scripted=scripted, runs_per_scenario=runs,
                                         created_by=person)
        err = Console(stderr=True)
        if skip:
            err.print(f"[yellow]skipped: {skip}[/yellow] (no run was made; nothing is faked)")
            results = [skipped_run(batch, s, k, skip) for s in scenarios for k in range(1, runs + 1)]
        else:
            results = self._execute(batch, scenarios, runs, person, err, no_worker=no_worker,
                                    concurrency=concurrency, timeout=timeout or (300.0 if scripted else 1800.0))
        self._report(batch, results, json_path)

    def _model_unusable(self, model: str) -> str:
        try:
            spec = parse_spec(model)
        except InvalidModelSpec as exc:
            raise CommandError(str(exc)) from None
        if spec.kind not in REMOTE_KINDS:
            raise CommandError(f"--model is script, openai:<model> or anthropic:<model>, not {model}")
        try:
            warning = check_model_spec(model)
        except InvalidModelSpec as exc:
            return str(exc)
        return warning.split(";")[0] if warning else ""

    def _person(self, username: str):
        users = get_user_model()
        person = users.objects.filter(username=username).first()
        if person is None:
            if username != EVAL_USER:
                raise CommandError(f"no user named {username!r}")
            person = users.objects.create_user(EVAL_USER)
            person.set_unusable_password()
            person.save(update_fields=["password"])
        return person

    def _execute(self, batch, scenarios, runs, person, err, *, no_worker, concurrency, timeout) -> list[EvalRun]:
        worker = redis = None
        if not no_worker:
            redis = _embedded_redis_if_needed()
            worker = EvalWorker(concurrency=concurrency)
            worker.wait_ready()
        try:
            planned = [ScenarioRun(scenario=s, batch=batch, person=person, run=k, timeout=timeout)
                       for s in scenarios for k in range(1, runs + 1)]
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=err, disable=not err.is_terminal) as progress:
                bar = progress.add_task(f"eval #{batch.pk} {batch.model}", total=len(planned))

                def advance(run: ScenarioRun) -> None:
                    progress.update(bar, advance=1, description=f"eval #{batch.pk}: {run.scenario.name} done")

                return run_scenarios(planned, progress=advance)
        finally:
            if worker is not None:
                worker.stop()
            if redis is not None:
                redis.stop()

    def _report(self, batch: EvalBatch, results: list[EvalRun], json_path: str | None) -> None:
        table = Table(title=f"eval #{batch.pk}: {batch.model}" + (f" ({batch.label})" if batch.label else ""))
        for column in ("scenario", "kind", "run", "state", "resets asked", "resets performed", "requests",
                       "request checks", "behaviour checks", "seconds"):
            table.add_column(column, justify="right" if column not in ("scenario", "kind", "state") else "left")
        for run in results:
            table.add_row(run.scenario, run.scenario_kind, str(run.run), run.state, str(run.resets_asked),
                          str(run.resets), str(run.requests_checked), f"{run.request_passed}/{run.request_total}",
                          f"{run.behaviour_passed}/{run.behaviour_total}" + (" (scripted)" if batch.scripted else ""),
                          f"{run.duration_ms / 1000:.1f}")
        # With --json - the JSON owns stdout: the table goes to stderr.
        out = Console(file=sys.stderr if json_path == "-" else self.stdout, width=160)
        out.print(table)
        passed = sum(r.request_passed for r in results)
        total = sum(r.request_total for r in results)
        percent = round(100.0 * passed / total, 1) if total else 0.0
        out.print(f"request checks: {passed}/{total} ({percent}%)  ·  "
                  f"behaviour checks: {sum(r.behaviour_passed for r in results)}/"
                  f"{sum(r.behaviour_total for r in results)}" + (
                      " (a scripted agent does what its script says: they measure the script, not a model)"
                      if batch.scripted else ""))
        for run in results:
            for check in run.checks:
                if check.get("note") and check["kind"] == "files_touched":
                    out.print(f"{run.scenario} #{run.run}: files touched? {check['note']}")
                if not check["passed"]:
                    out.print(f"[red]FAIL[/red] {run.scenario} #{run.run} {check['family']} {check['label']}")
                    for line in check["evidence"]:
                        out.print(f"    {line}")
            if run.reason:
                out.print(f"[yellow]{run.state}[/yellow] {run.scenario} #{run.run}: {run.reason}")
        if json_path:
            data = {"batch": batch.pk, "model": batch.model, "scripted": batch.scripted, "label": batch.label,
                    "request_checks": {"passed": passed, "total": total, "percent": percent},
                    "behaviour_checks": {"passed": sum(r.behaviour_passed for r in results),
                                         "total": sum(r.behaviour_total for r in results)},
                    "runs": [run_summary(r) for r in results]}
            if json_path == "-":
                sys.stdout.write(dumps(data) + "\n")
            else:
                Path(json_path).write_text(dumps(data) + "\n", encoding="utf-8")

    # ------------------------------------------------------------------ compare
    def _compare(self, ids: list[str], json_path: str | None) -> None:
        if len(ids) != 2 or not all(i.isdigit() for i in ids):
            raise CommandError("usage: manage.py eval compare A B (two eval batch numbers)")
        batches = {b.pk: b for b in EvalBatch.objects.filter(pk__in=[int(i) for i in ids])}
        missing = [i for i in ids if int(i) not in batches]
        if missing:
            raise CommandError(f"no eval batch {', '.join(missing)}")
        verdicts = eval_compare(a=batches[int(ids[0])], b=batches[int(ids[1])])
        table = Table(title=f"eval compare #{ids[0]} → #{ids[1]}")
        for column in ("scenario", "verdict", "detail"):
            table.add_column(column)
        for v in verdicts:
            table.add_row(v.subject, v.verdict, v.detail)
        Console(file=self.stdout, width=160).print(table)
        if json_path:
            data = [{"scenario": v.subject, "verdict": v.verdict, "detail": v.detail} for v in verdicts]
            Path(json_path).write_text(dumps(data) + "\n", encoding="utf-8")


def _embedded_redis_if_needed() -> EmbeddedRedis | None:
    """On the embedded defaults (no REDIS_URL) with no hub running, the broker is not
    there: start the embedded Redis for this run, as `manage.py start` would."""
    if os.environ.get("REDIS_URL"):
        return None
    embedded = EmbeddedRedis(Path(settings.DATA_DIR) / "redis.sock")
    if embedded.ping():
        return None  # a hub runs on this data folder
    return embedded.start()


def _check_migrated() -> None:
    """A database without the hub's tables (a fresh data folder) is said plainly."""
    try:
        pending = MigrationExecutor(connection).migration_plan(MigrationLoader(connection).graph.leaf_nodes())
    except DatabaseError as exc:
        raise CommandError(f"The database cannot be read ({exc}).") from None
    if pending:
        raise CommandError(f"The database is not set up ({len(pending)} migration(s) not applied): run "
                           "`manage.py migrate` (or `manage.py start`, which does) first.")
