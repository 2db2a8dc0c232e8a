from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import observations.replay
from observations.replay import iter_trajectories, load_trajectories
from observations.replay.readers import write_atrium

FIXTURES = Path(__file__).parent / "fixtures"
DEVELOPMENT_SET = Path(__file__).resolve().parents[3] / "shared" / "data" / "trajectories"


def copy_fixtures(to: Path) -> Path:
    shutil.copytree(FIXTURES, to / "runs")
    return to / "runs"


def test_a_directory_is_walked_recursively_and_every_format_is_read(tmp_path):
    runs = copy_fixtures(tmp_path)
    (runs / "nested").mkdir()
    shutil.move(runs / "astropy__astropy-7606.traj", runs / "nested" / "astropy__astropy-7606.traj")
    result = load_trajectories([runs])
    assert result.problems == []
    assert sorted((t.source, t.trajectory_id) for t in result.trajectories) == [
        ("mini-swe-agent", "astropy__astropy-13033"),
        ("openhands", "ponylang__ponyc-4593"),
        ("swe-agent", "astropy__astropy-7606"),
        ("swe-agent", "django__django-13109"),
    ]


def test_truncated_file_is_reported_by_name_and_skipped(tmp_path):
    runs = copy_fixtures(tmp_path)
    victim = runs / "django__django-13109.traj"
    victim.write_bytes(victim.read_bytes()[:5000])
    result = load_trajectories([runs])
    [problem] = result.problems
    assert problem.path == str(victim)
    assert problem.reason.startswith("not valid JSON (truncated?)") and "\n" not in problem.reason
    assert len(result.trajectories) == 3


def test_a_malformed_line_of_a_jsonl_file_skips_only_that_line(tmp_path):
    line = (FIXTURES / "openhands_ponyc-4593.jsonl").read_text().splitlines()[0]
    target = tmp_path / "output.jsonl"
    target.write_text("\n".join([line, line[: len(line) // 2], "", line]) + "\n")
    result = load_trajectories([target])
    assert [p.path for p in result.problems] == [f"{target}:2"]
    assert [t.path for t in result.trajectories] == [f"{target}:1", f"{target}:4"]


def test_wrong_shapes_are_reported_with_their_reason(tmp_path):
    (tmp_path / "list.traj.json").write_text("[1, 2]")
    (tmp_path / "empty.traj").write_text(json.dumps({"history": [], "trajectory": []}))
    mini = json.loads((FIXTURES / "astropy__astropy-13033.traj.json").read_text())
    mini["messages"] = mini["messages"][:2]
    (tmp_path / "no-steps.traj.json").write_text(json.dumps(mini))
    mini["messages"][1] = "not a message"
    (tmp_path / "bad-message.traj.json").write_text(json.dumps(mini))
    result = load_trajectories([tmp_path, tmp_path / "missing.traj"])
    reasons = {Path(p.path).name: p.reason for p in result.problems}
    assert reasons == {
        "bad-message.traj.json": "messages[1]: expected an object, got str",
        "empty.traj": "history[0..1]: expected the system prompt, then the task",
        "list.traj.json": "not a recognised trajectory format",
        "no-steps.traj.json": "no model steps",
        "missing.traj": "no such file or directory",
    }
    assert result.trajectories == []


def test_a_named_file_is_recognised_by_content_whatever_its_name(tmp_path):
    odd = tmp_path / "run-42.json"
    shutil.copy(FIXTURES / "astropy__astropy-7606.traj", odd)
    [trajectory] = load_trajectories([odd]).trajectories
    assert trajectory.source == "swe-agent"
    # In a directory walk only trajectory names are picked up.
    assert load_trajectories([tmp_path]).trajectories == []


def test_atrium_files_load_alongside_the_others(tmp_path):
    runs = copy_fixtures(tmp_path)
    [original] = load_trajectories([runs / "astropy__astropy-13033.traj.json"]).trajectories
    write_atrium(original, runs / "exported.atrium.json")
    loaded = [t for t in load_trajectories([runs]).trajectories if t.path.endswith(".atrium.json")]
    assert [t.steps for t in loaded] == [original.steps]


def test_iteration_streams_and_reports_problems_as_they_come(tmp_path):
    runs = copy_fixtures(tmp_path)
    (runs / "zz.traj").write_text("{")
    problems = []
    stream = iter_trajectories([runs], on_problem=problems.append)
    first = next(stream)
    assert first.trajectory_id == "astropy__astropy-13033" and problems == []
    rest = list(stream)
    assert len(rest) == 3 and [Path(p.path).name for p in problems] == ["zz.traj"]


def test_replay_package_never_imports_django():
    package = Path(observations.replay.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            )
            offenders += [
                f"{path.name}: {n}"
                for n in names
                if n.split(".")[0] in {"django", "rooms", "agents"}
            ]
    assert offenders == []
    code = "import sys, observations.replay, observations.replay.__main__; print('django' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=package.parent.parent,
    )
    assert out.stdout.strip() == "False"


def test_command_line_prints_problems_and_recognition_table(tmp_path):
    runs = copy_fixtures(tmp_path)
    (runs / "broken.traj").write_text('{"history": [')
    out = subprocess.run(
        [sys.executable, "-m", "observations.replay", str(runs)],
        capture_output=True,
        text=True,
        cwd=Path(observations.replay.__file__).parents[2],
    )
    assert out.returncode == 0
    assert "broken.traj: not valid JSON" in out.stderr
    assert out.stdout.startswith("loaded 4 trajectories (47 steps)")
    assert "mini-swe-agent" in out.stdout and "openhands" in out.stdout


requires_development_set = pytest.mark.skipif(
    not DEVELOPMENT_SET.is_dir(), reason=f"development set not present at {DEVELOPMENT_SET}"
)


@requires_development_set
def test_the_whole_development_set_loads_without_problems():
    started = time.perf_counter()
    result = load_trajectories([DEVELOPMENT_SET])
    elapsed = time.perf_counter() - started
    assert result.problems == []
    sources = [t.source for t in result.trajectories]
    assert (
        sources.count("mini-swe-agent"),
        sources.count("swe-agent"),
        sources.count("openhands"),
    ) == (100, 17, 3)
    # A few seconds on one core is the budget; a generous bound catches a pathological slowdown.
    assert elapsed < 30
