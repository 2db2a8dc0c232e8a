from __future__ import annotations

from pathlib import Path

from observations.replay import load_trajectories
from observations.replay.stats import format_stats, recognition_stats

FIXTURES = Path(__file__).parent / "fixtures"


def test_read_like_calls_are_split_into_outcomes_per_source():
    stats = recognition_stats(load_trajectories([FIXTURES]).trajectories)
    mini, swe, openhands = stats["mini-swe-agent"], stats["swe-agent"], stats["openhands"]
    # mini: three whole-file cats, and one whose output mini-swe-agent elided.
    assert dict(mini.read_like) == {"read": 3, "cut": 1}
    assert mini.calls["read"] == 3 and mini.total_calls == 11 and mini.steps == 12
    # swe-agent: five editor views with content, one abbreviated "too large" view.
    assert dict(swe.read_like) == {"read": 5, "cut": 1}
    # openhands: four views with content, one refused for a bad view_range.
    assert dict(openhands.read_like) == {"read": 4, "failed": 1}


def test_table_has_a_row_per_source_with_the_handled_share():
    table = format_stats(recognition_stats(load_trajectories([FIXTURES]).trajectories))
    header, *rows = table.splitlines()
    assert header.split()[:4] == ["source", "runs", "steps", "calls"]
    assert [row.split()[0] for row in rows] == ["mini-swe-agent", "openhands", "swe-agent"]
    assert all(row.endswith("100.0%") for row in rows)
