"""Benchmark: what the sandbox costs a command, against the same command unconfined.

Run: .venv/bin/pytest -m bench tests/bench/test_sandbox_overhead.py -s
Prints the median wall time of running a command (`true`, `python -c pass`) confined as
the ToolBox confines it (prepare + bubblewrap) and unconfined (the operator's opt-out),
their ratio, and the time to hand a 20,000-file worktree to the sandbox user (a root hub
does that before each command). A shell call adds the job machinery's ~0.1 s polling to
both alike.

It also prints what the seccomp filter, the room's control group and a networked command
add, each as a ratio against the plain bubblewrap sandbox measured in the same run (a networked
command starts slirp4netns and sets its namespace's routes before the command runs).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from agents.tools.handover import hand_over, prepare
from agents.tools.sandbox import (
    Confined,
    Place,
    cgroups_usable,
    confine,
    interpreter_policy,
    launched,
)

RUNS = 30


def _median_run(policy, place: Place, command: str, adjust=lambda confined: confined) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        prepare(policy, place)
        confined = adjust(confine(policy, place, command))
        with launched(confined) as (argv, pass_fds):
            done = subprocess.run(argv, env=confined.env, cwd=confined.cwd, capture_output=True, pass_fds=pass_fds)
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


@pytest.mark.bench
def test_sandbox_overhead_per_command(tmp_path):
    place = Place(worktree=tmp_path / "wt", tmp=tmp_path / "tmp")
    place.worktree.mkdir()
    (place.worktree / "a.py").write_text("x = 1\n")
    sandboxed = interpreter_policy()
    unconfined = dataclasses.replace(sandboxed, enabled=False)
    print()
    for command in ("true", "python -c pass"):
        base = _median_run(unconfined, place, command)
        boxed = _median_run(sandboxed, place, command)
        print(f"{command!r}: unconfined {base * 1000:.1f} ms, sandboxed {boxed * 1000:.1f} ms, "
              f"ratio {boxed / base:.2f}x, overhead {(boxed - base) * 1000:.1f} ms")


@pytest.mark.bench
def test_what_the_seccomp_filter_adds(tmp_path):
    """The same bubblewrap command line with and without its seccomp program."""
    place = Place(worktree=tmp_path / "wt", tmp=tmp_path / "tmp")
    place.worktree.mkdir()
    policy = interpreter_policy()

    def without_filter(confined: Confined) -> Confined:
        at = confined.argv.index("--seccomp")
        return dataclasses.replace(confined, argv=confined.argv[:at] + confined.argv[at + 2:], seccomp=b"")

    print()
    base = _median_run(policy, place, "true", adjust=without_filter)
    filtered = _median_run(policy, place, "true")
    print(f"bubblewrap without the seccomp filter {base * 1000:.1f} ms, with it {filtered * 1000:.1f} ms per "
          f"command: {filtered / base:.2f}x")


@pytest.mark.bench
@pytest.mark.skipif(not cgroups_usable("/sys/fs/cgroup"), reason="control groups need a root hub")
def test_what_the_rooms_group_and_the_network_add(tmp_path):
    place = Place(worktree=tmp_path / "wt", tmp=tmp_path / "tmp")
    place.worktree.mkdir()
    policy = interpreter_policy()
    variants = {
        "bubblewrap alone": place,
        "+ the room's control group": dataclasses.replace(place, group="room-bench"),
        "+ the network (slirp4netns, routes)": dataclasses.replace(place, network=True),
        "+ both": dataclasses.replace(place, group="room-bench", network=True),
    }
    print()
    base = None
    for name, variant in variants.items():
        took = _median_run(policy, variant, "true")
        base = base or took
        print(f"{name}: {took * 1000:.1f} ms per command, {took / base:.2f}x bubblewrap alone")


@pytest.mark.bench
@pytest.mark.skipif(os.geteuid() != 0, reason="only a root hub hands the worktree over")
def test_handing_a_large_worktree_over(tmp_path):
    root = tmp_path / "wt"
    for d in range(200):
        folder = root / f"pkg{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"m{f}.py").write_text("x = 1\n")
    started = time.perf_counter()
    changed = hand_over(root, 65534, 65534)
    first = time.perf_counter() - started
    started = time.perf_counter()
    again = hand_over(root, 65534, 65534)
    second = time.perf_counter() - started
    print(f"\nhand over 20,200 entries: first {first * 1000:.0f} ms ({changed} changed), "
          f"then {second * 1000:.0f} ms ({again} changed) per command")
    assert Path(root / "pkg0" / "m0.py").stat().st_uid == 65534
