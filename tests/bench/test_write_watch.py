"""Benchmark: finding what a command changed, on a 5,000-file worktree, against the
command itself, measured in one run.

Run: .venv/bin/pytest -m bench tests/bench/test_write_watch.py -s -n0
Printed: the median time (RUNS) of a reading of the worktree after a command that
changed nothing, after one that changed a file, and of the command alone (``sed -i`` on
one file, started as the sandbox starts a command's shell), with the ratios.
"""

from __future__ import annotations

import statistics
import subprocess
import time

import pytest

from rooms.repository.worktrees import worktree_create
from sessions.worker.file_reads import WorktreeReads
from tests.rooms.factories import make_git_repo

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db

RUNS = 21
FILES = 5_000


def _median(action) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.mark.bench
def test_reading_a_5000_file_worktree_after_each_command(tmp_path):
    files = {f"pkg{n // 100:02d}/mod_{n:04d}.py": f"def f_{n}(x):\n    return x + {n}\n" for n in range(FILES)}
    repo = make_git_repo(tmp_path / "room", files=files)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    reads = WorktreeReads(worktree)
    _, reading = reads.file_changes(None)
    counter = iter(range(10**6))

    def command() -> None:
        subprocess.run(["bash", "-c", f"sed -i 's/return x/return  x/;s/# {next(counter)}//' pkg07/mod_0700.py"],
                       cwd=worktree.path, check=True)

    def unchanged() -> None:
        nonlocal reading
        changes, reading = reads.file_changes(reading)
        assert changes == []

    def changed() -> None:
        nonlocal reading
        (worktree.path / "pkg03/mod_0300.py").write_text(f"# {next(counter)}\n")
        changes, reading = reads.file_changes(reading)
        assert [c.path for c in changes] == ["pkg03/mod_0300.py"]

    alone = _median(command)
    _, reading = reads.file_changes(reading)  # what the timed commands changed
    nothing, one = _median(unchanged), _median(changed)
    print(f"\n{FILES:,} files, median of {RUNS}: the command alone {alone * 1000:.1f} ms; a reading after it "
          f"{nothing * 1000:.1f} ms when nothing changed ({nothing / alone:.2f}x the command), "
          f"{one * 1000:.1f} ms when one file changed ({one / alone:.2f}x)")
