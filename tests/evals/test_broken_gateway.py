"""The checks can fail: with a gateway that drops the handoff's decisions, or lets a
tool's output into them, the matching scenarios fail, with evidence naming the request
and the missing (or misplaced) text."""

from __future__ import annotations

import json
import socket
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests.conftest import CeleryWorker, _wait_until, start_hub_process

SCENARIOS = Path(__file__).resolve().parents[2] / "evals" / "scenarios"


@pytest.fixture
def broken_worker(transactional_db, tmp_path):
    started = []

    def start(mode: str) -> CeleryWorker:
        nodename = f"atrium-broken-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        process = start_hub_process(
            "broken worker",
            [sys.executable, "-m", "celery", "-A", "tests.evals.broken_gateway", "worker", "--hostname",
             nodename, "--queues", settings.CELERY_TASK_DEFAULT_QUEUE, "--pool", "prefork", "--concurrency", "1",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
            tmp_path / f"broken-{mode}.log", ATRIUM_TEST_BROKEN_GATEWAY=mode, ATRIUM_WORKER_SLICE_SECONDS="600",
        )
        started.append(process)
        worker = CeleryWorker(hub_process=process, nodename=nodename, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
        _wait_until(lambda: worker.ping(timeout=0.5), process, "answer a ping")
        return worker

    yield start
    for process in started:
        process.stop()


def run_eval(person, tmp_path, *names: str) -> dict:
    out = tmp_path / "eval.json"
    call_command("eval", *(str(SCENARIOS / f"{n}.yaml") for n in names), "--no-worker", "--as", person.username,
                 "--json", str(out))
    return {run["scenario"]: run for run in json.loads(out.read_text())["runs"]}


def failed(run: dict, kind: str) -> list[dict]:
    return [c for c in run["checks"] if c["family"] == "request" and c["kind"] == kind and not c["passed"]]


@pytest.mark.timeout(300)
def test_without_the_decisions_section_the_constraint_scenarios_fail_with_evidence(broken_worker, person, tmp_path):
    broken_worker("no-decisions")
    runs = run_eval(person, tmp_path, "constraint-vendor", "changed-naming-steer")
    vendor = runs["constraint-vendor"]
    assert vendor["state"] == "failed" and vendor["resets"] >= 3
    (check,) = failed(vendor, "in_force")
    assert any(e.startswith("request #") and "missing from the handoff's decisions in force" in e
               and "Never edit anything under vendor/" in e for e in check["evidence"])
    steer = runs["changed-naming-steer"]
    assert steer["state"] == "failed"
    (superseded,) = failed(steer, "superseded")
    assert any("not listed as superseded" in e for e in superseded["evidence"])
    # What does not depend on the decisions still passes: the ledger's files are exact.
    assert not failed(vendor, "files_touched")


@pytest.mark.timeout(300)
def test_a_tool_output_let_into_the_decisions_fails_the_injection_scenario_with_evidence(
        broken_worker, person, tmp_path):
    broken_worker("tool-output-in-decisions")
    runs = run_eval(person, tmp_path, "injection-file")
    run = runs["injection-file"]
    assert run["state"] == "failed"
    (check,) = failed(run, "stays_in_tool_result")
    assert any("is in the handoff's decisions section" in e and "IGNORE PREVIOUS RULES." in e
               for e in check["evidence"])
    assert not failed(run, "in_force")  # the rule itself still stands
