"""Evaluation: the writes the gateway endpoint infers from a shell-only client's calls,
against what each run's final patch changed, over the recorded mini-swe-agent runs in
``../shared/data`` (their edits are all shell).

Run: .venv/bin/pytest -m bench tests/bench/test_inferred_writes.py -s -n0
Each recorded bash call goes through the endpoint's own inference (a client's tool call
and its output: ``observation_input``, ``inferred_changes``), the session's record is
read as ``session_files_touched`` reads it (``paths_changed``), and that list is
compared with the files of the run's submission (``diff --git a/<path>``). Printed: the
runs whose every patched file was inferred, the patched files inferred of all patched
files (and how many of those missed no call of the run names: changes the benchmark's
environment made before the agent ran, such as sphinx's ``tox.ini``), and how many of
the paths the record leaves changed the patch holds (the rest: the agents' scratch
files the patch leaves out, files restored in ways not followed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from endpoint.feed import inferred_changes, observation_input
from observations.gateway.messages import ToolCall
from observations.gateway.transcript import Observation
from observations.replay.readers.mini_swe_agent import read_mini_swe_agent
from sessions.runtime.file_changes import paths_changed

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "trajectories" / "mini-swe-agent_gemini-3-pro"
CLIENT_CWD = "/.client-cwd/"  # where the endpoint keys a client's relative paths (endpoint/shell_calls.py)


def _inferred(trajectory) -> set[str]:
    """What the session's record leaves changed (``session_files_touched``'s answer)."""
    records, calls = [], []
    for step in trajectory.steps:
        for event in step.events:
            call = ToolCall(event.call_id, "bash", event.arguments)
            records += inferred_changes(Observation(obs_id=0, step=step.index, source=observation_input(
                call, event.output, calls)), step.index, calls)
            calls.append(call)
    return {path.removeprefix(CLIENT_CWD).removeprefix("/testbed/") for path in paths_changed(records)}


@pytest.mark.bench
def test_inferred_writes_against_each_runs_final_patch():
    files = sorted(DATA.glob("*.traj.json"))
    if not files:
        pytest.skip(f"no recorded runs in {DATA}")
    whole_runs, patched_total, patched_found, inferred_total, inferred_in_patch, unnamed = 0, 0, 0, 0, 0, 0
    for path in files:
        data = json.loads(path.read_text())
        patched = set(re.findall(r"^diff --git a/(\S+) b/", data.get("info", {}).get("submission") or "", re.M))
        trajectory = read_mini_swe_agent(data, path=str(path))
        inferred = _inferred(trajectory)
        commands = "\n".join(str(event.arguments) for step in trajectory.steps for event in step.events)
        unnamed += sum(1 for missed in patched - inferred if missed.rpartition("/")[2] not in commands)
        whole_runs += patched <= inferred
        patched_total, patched_found = patched_total + len(patched), patched_found + len(patched & inferred)
        inferred_total, inferred_in_patch = inferred_total + len(inferred), inferred_in_patch + len(inferred & patched)
    print(f"\n{len(files)} mini-swe-agent runs: every patched file inferred in {whole_runs}; "
          f"{patched_found}/{patched_total} patched files inferred ({patched_found / patched_total:.0%}; "
          f"of the {patched_total - patched_found} missed, {unnamed} named by no call); "
          f"{inferred_in_patch}/{inferred_total} inferred paths are in the patch "
          f"({inferred_in_patch / inferred_total:.0%})")
