"""Scenario files: the shipped ones are valid and shaped as the issue asks; a bad file
is refused with one clear message per bad field."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evals.provider import ScriptProvider, script_turns, turn_end_steps
from evals.scenario import KINDS, ScenarioError
from evals.scenario_files import load_scenario, scenario_from
from observations.gateway.messages import Message, Request

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "evals" / "scenarios").glob("*.yaml"))


def test_the_shipped_scenarios_are_three_of_each_kind_and_shell_edits_with_13_or_14_turns_and_3_resets():
    scenarios = [load_scenario(p) for p in SCENARIOS]
    assert len(scenarios) >= 13
    # The twelve of the kinds, and a topics run whose every change is made through the shell.
    assert Counter(s.kind for s in scenarios) == {kind: 3 for kind in KINDS} | {"topics": 4}
    assert any(s.name == "shell-edits" for s in scenarios)
    for s in scenarios:
        assert 13 <= len(s.turns) <= 14, s.name
        assert s.resets_asked >= 3, s.name
        assert s.request_checks() and any(c.kind == "files_touched" for c in s.checks), s.name
        assert any(len(text) > 10_000 for text in s.files.values()), f"{s.name} has no padding"


def minimal(**overrides) -> dict:
    raw = {
        "kind": "constraint_survives",
        "repo": {"files": {"a.py": "x = 1\n"}},
        "task": {"title": "T", "objective": "O", "constraints": "Never edit b.py."},
        "turns": [{"agent": [{"calls": [{"tool": "read_file", "path": "a.py"}]}]},
                  {"person": "Go on.", "reset": True, "agent": [{"say": "ok"}]}],
        "checks": [{"request": "in_force", "text": "Never edit b.py."}],
    }
    raw.update(overrides)
    return raw


def test_a_valid_minimal_scenario_loads():
    scenario = scenario_from(minimal(), source="min")
    assert scenario.resets_asked == 1 and len(scenario.version) == 12


def test_every_bad_field_is_named_in_one_error():
    raw = minimal(kind="vibes", window="big", colour="red",
                  repo={"files": {"../escape.py": "x", "ok.py": 3}, "padding": [{"path": "p.txt", "lines": 0}]},
                  turns=[{"person": "hi", "agent": [{"calls": [{"tool": "rm_rf"}]}]},
                         {"reset": "yes", "replaces": ["D1"], "agent": "none"}],
                  checks=[{"request": "in_force"}, {"request": "vibes_ok"}, {"behaviour": "untouched", "path_glob": ""},
                          {"request": "coordinates", "path": "a.py", "from_turn": 9}])
    with pytest.raises(ScenarioError) as caught:
        scenario_from(raw, source="bad.yaml")
    problems = caught.value.problems
    expected = [
        "colour: unknown field",
        "kind: 'vibes' is not one of",
        "window: must be a whole number",
        "repo.files['../escape.py']: must be a relative path",
        "repo.files['ok.py']: the file's text must be text",
        "repo.padding[0].lines: must be at least 1",
        "turns[0].person: the first turn is the task itself",
        "turns[0].agent[0].calls[0].tool: 'rm_rf' is not one of",
        "turns[1].person: required",
        "turns[1].replaces: must be a list of decision numbers",
        "turns[1].reset: must be true or false",
        "turns[1].agent: must be a list",
        "checks[0].text: required for in_force",
        "checks[1].request: 'vibes_ok' is not one of",
        "checks[2].path_glob: must be non-empty text",
        "checks[3].from_turn: must be a turn number from 1 to 2",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)
    assert str(caught.value).startswith("bad.yaml:")


def test_a_file_that_is_not_yaml_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"broken.yaml: is not valid YAML"):
        load_scenario(bad)


def test_the_script_plays_each_turn_then_awaits_the_next_message_and_repeats_its_last_answer(tmp_path):
    scenario = scenario_from(minimal(), source="min")
    turns = script_turns(scenario)
    assert [[c[1] for c in t.tool_calls] for t in turns] == [["read_file", "await"], [], []]
    assert turn_end_steps(scenario) == [1, 3]
    (tmp_path / "min.json").write_text(__import__("json").dumps(scenario.raw))
    provider = ScriptProvider.from_script("min.json", script_dir=tmp_path)
    assert provider.spec == "script:min.json"

    def request(step: int) -> Request:
        return Request(model="m", system="s", tools=(), messages=(Message("user", "go"),), max_tokens=0, step=step)

    assert provider.complete(request(0)).tool_calls[1].name == "await"
    assert provider.complete(request(2)).text == "Turn 2 is done."
    assert provider.complete(request(7)).text == "Turn 2 is done."  # a nudge gets the answer again


def test_eval_on_a_database_without_the_hubs_tables_says_to_migrate(tmp_path):
    """Issue 28: `manage.py eval` on a fresh data folder printed a traceback."""
    import os
    import subprocess
    import sys

    from tests.conftest import PROJECT_ROOT

    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(ATRIUM_DATA_DIR=str(tmp_path / "fresh"), DEBUG="true")
    scenario = next((PROJECT_ROOT / "evals" / "scenarios").glob("*.yaml"))
    done = subprocess.run([sys.executable, "manage.py", "eval", str(scenario)], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "The database is not set up" in done.stderr and "manage.py migrate" in done.stderr
