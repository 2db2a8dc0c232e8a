"""With a real model and no key, the runs are skipped with a clear message, never faked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals.models import EvalRun

SCENARIO = Path(__file__).resolve().parents[2] / "evals" / "scenarios" / "constraint-vendor.yaml"


@pytest.mark.django_db
def test_a_real_model_without_a_key_is_skipped_with_the_reason(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "eval.json"
    call_command("eval", str(SCENARIO), "--model", "openai:gpt-4.1", "--json", str(out))
    report = json.loads(out.read_text())
    assert [r["state"] for r in report["runs"]] == ["skipped"] * 3  # --runs 3 by default for a real model
    assert "needs an API key: set OPENAI_API_KEY" in report["runs"][0]["reason"]
    assert "skipped: openai:gpt-4.1 needs an API key" in capsys.readouterr().err
    assert EvalRun.objects.filter(state="skipped").count() == 3
    assert not EvalRun.objects.exclude(state="skipped").exists()


@pytest.mark.django_db
def test_an_unknown_model_kind_is_refused():
    with pytest.raises(CommandError, match="--model is script, openai:<model> or anthropic:<model>"):
        call_command("eval", str(SCENARIO), "--model", "replay:demo-fix-median.json")


@pytest.mark.django_db
def test_a_bad_scenario_file_stops_the_command_with_every_problem(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "nope", "repo": {"files": {"a": "x"}}, "task": {"title": "t", "objective": "o"},'
                   ' "turns": [{}], "checks": [{"request": "in_force"}]}')
    with pytest.raises(CommandError) as caught:
        call_command("eval", str(bad))
    assert "kind: 'nope' is not one of" in str(caught.value)
    assert "checks[0].text: required for in_force" in str(caught.value)
