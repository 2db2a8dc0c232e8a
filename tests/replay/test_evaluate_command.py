"""`python manage.py replay` end to end on the committed fixtures, with no database.

No test here has the django_db mark, so pytest-django refuses any database access:
a query anywhere in the command would fail the test.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from observations.management.commands.replay import Command, parse_windows
from observations.replay.eval import POLICIES

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUNS = 4 * 2 * len(POLICIES)  # the fixtures' trajectories × windows × policies


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("replay", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[str, Path, Path]:
    tmp = tmp_path_factory.mktemp("replay")
    output = run(
        str(FIXTURES),
        "--window",
        "32k,128k",
        "--json",
        str(tmp / "a.json"),
        "--chart",
        str(tmp / "a.png"),
    )
    return output, tmp / "a.json", tmp / "a.png"


def test_the_command_skips_system_checks_and_needs_no_database():
    assert Command.requires_system_checks == []
    assert Command.requires_migrations_checks is False


def test_it_prints_the_table_per_policy_and_window_with_source_subtotals(replayed):
    output, _, _ = replayed
    assert "Replayed 4 trajectories" in output
    for heading in (
        "All sources",
        "Source: mini-swe-agent",
        "Source: openhands",
        "Source: swe-agent",
    ):
        assert heading in output
    for column in (
        "cost ×none",
        "cost ×none, fold reads start",
        "input ×none",
        "cache-read",
        "payload receipts",
        "segments",
        "re-reads after eviction",
        "denied re-reads",
        "needed again",
        "steps after leaving",
        "over ceiling",
    ):
        assert column in output
    for policy in POLICIES:
        assert f" {policy} " in output
    assert "token estimate vs provider-reported input" in output


def test_it_writes_everything_per_trajectory_as_json(replayed):
    _, json_path, _ = replayed
    data = json.loads(json_path.read_text())
    assert data["format"] == "atrium-replay-results"
    assert data["windows"] == [32_000, 128_000]
    assert data["policies"][0] == "none"
    assert data["settings"]["cost"]["cache_write"] == 1.25
    assert data["settings"]["gateway"]["target_ratio"] == pytest.approx(0.3)
    assert len(data["trajectories"]) == 4
    first = data["trajectories"][0]
    assert len(first["fingerprint"]) == 64
    assert len(first["runs"]) == 2 * len(POLICIES)  # the table's, room dedup, the peers, oracle
    assert {"masking-10", "anthropic-clear", "openhands-condenser", "auto-compact-codex"} <= set(POLICIES)
    run0 = first["runs"][0]
    assert len(run0["per_request"]["sent"]) == run0["requests"] > 0
    assert run0["cost"] == pytest.approx(run0["input_cost"] + run0["output_cost"], abs=0.02)


def test_it_draws_the_chart(replayed):
    output, _, png = replayed
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert "chart of " in output


def test_a_malformed_file_is_reported_by_name_and_skipped(tmp_path):
    shutil.copy(FIXTURES / "django__django-13109.traj", tmp_path / "good.traj")
    whole = (FIXTURES / "astropy__astropy-7606.traj").read_bytes()
    (tmp_path / "truncated.traj").write_bytes(whole[: len(whole) // 2])
    output = run(str(tmp_path), "--window", "64k", "--policy", "on_demand")
    assert f"skipped {tmp_path / 'truncated.traj'}: not valid JSON" in output
    assert "Replayed 1 trajectories" in output and "1 file(s) skipped" in output


def test_nothing_readable_is_an_error_after_listing_what_was_skipped(tmp_path):
    (tmp_path / "bad.traj").write_text("{")
    with pytest.raises(CommandError, match="no trajectory could be read"):
        run(str(tmp_path / "bad.traj"), "--window", "64k")


def test_compare_of_a_result_set_with_itself_has_no_observed_effect(replayed):
    _, json_path, _ = replayed
    output = run("compare", str(json_path), str(json_path), "--no-ledger")
    assert "thresholds:" in output
    assert (
        f"totals: {RUNS} runs compared: 0 helped, 0 hurt, {RUNS} no observed effect, 0 confounded" in output
    )


def test_compare_with_other_prices_is_confounded(replayed, tmp_path):
    _, json_path, _ = replayed
    other = tmp_path / "b.json"
    run(str(FIXTURES), "--window", "32k,128k", "--price-output", "1", "--json", str(other))
    output = run("compare", str(json_path), str(other), "--no-ledger")
    assert f"0 helped, 0 hurt, 0 no observed effect, {RUNS} confounded" in output
    assert "settings differ: cost" in output


def test_compare_on_a_database_never_migrated_says_so_without_a_traceback(replayed, tmp_path):
    """A fresh checkout's embedded database has no tables yet: the comparison is shown,
    and storing its verdicts fails with what to do, not a traceback."""
    _, json_path, _ = replayed
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}",
           "ATRIUM_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "manage.py", "replay", "compare", str(json_path), str(json_path)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 1
    assert f"{RUNS} no observed effect" in done.stdout
    assert "could not be stored in the eval ledger" in done.stderr and "manage.py migrate" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_compare_needs_two_results_files(tmp_path):
    with pytest.raises(CommandError, match="usage: replay compare"):
        run("compare", "only-one.json", "--no-ledger")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(CommandError, match="not a replay results file"):
        run("compare", str(tmp_path / "x.json"), str(tmp_path / "x.json"), "--no-ledger")


def test_bad_options_fail_clearly_before_anything_is_written(tmp_path):
    with pytest.raises(CommandError, match="--policy: unknown policy lazy"):
        run(str(FIXTURES), "--policy", "lazy")
    with pytest.raises(CommandError, match="--window: 'huge'"):
        run(str(FIXTURES), "--window", "huge")
    with pytest.raises(CommandError, match="--json: no such directory"):
        run(str(FIXTURES), "--json", str(tmp_path / "missing" / "out.json"))
    with pytest.raises(CommandError, match="--chart: no replayed trajectory is called 'nope'"):
        run(
            str(FIXTURES),
            "--window",
            "64k",
            "--chart",
            str(tmp_path / "c.png"),
            "--chart-trajectory",
            "nope",
            "--json",
            str(tmp_path / "out.json"),
        )
    assert list(tmp_path.iterdir()) == []


def test_the_working_set_guard_can_be_set_and_is_recorded(tmp_path):
    with pytest.raises(CommandError, match="must not be negative"):
        run(str(FIXTURES), "--policy", "on_demand", "--optional-min-freed", "-1")
    run(str(FIXTURES), "--policy", "on_demand", "--window", "16k", "--optional-min-freed", "0",
        "--working-set-steps", "3", "--json", str(tmp_path / "g.json"))
    gateway = json.loads((tmp_path / "g.json").read_text())["settings"]["gateway"]
    assert (gateway["optional_min_freed"], gateway["working_set_steps"]) == (0, 3)


def test_windows_read_k_and_m_suffixes():
    assert parse_windows("32k, 128000,1m") == [32_000, 128_000, 1_000_000]


def test_without_matplotlib_a_chart_is_refused_before_the_replay(tmp_path, monkeypatch):
    """matplotlib is the `chart` extra: a production install has none."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    monkeypatch.setattr("observations.management.commands.replay.Command._run",
                        lambda *a, **k: pytest.fail("replayed before refusing the chart"))
    with pytest.raises(CommandError, match=r"--chart: drawing a chart needs matplotlib: install the `chart` extra"):
        run(str(FIXTURES), "--chart", str(tmp_path / "c.png"))


def test_a_replay_without_a_chart_never_imports_matplotlib(tmp_path):
    """Only --chart loads matplotlib (the `chart` extra), so a plain replay runs without it."""
    script = (
        "import sys, django; django.setup()\n"
        "from django.core.management import call_command\n"
        f"call_command('replay', {str(FIXTURES)!r}, '--window', '32k', '--json', {str(tmp_path / 'r.json')!r})\n"
        "print('matplotlib loaded:', 'matplotlib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "hub.settings"}, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("matplotlib loaded: False")
    assert (tmp_path / "r.json").is_file()
