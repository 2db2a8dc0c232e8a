"""Benchmark: cloning a room over the git remote, against git's own clones of the same
repository from a local bare copy, measured in one run.

Run: .venv/bin/pytest -m bench tests/bench/test_git_remote_clone.py -s -n0
A 5,000-file repository (each file a few hundred bytes, in 50 folders) is the room's.
Three clones, median of RUNS each: over the hub's smart HTTP (real Daphne, a token),
``git clone --no-local`` of a local bare copy (git's transport: pack made and sent, as
over HTTP) and ``git clone`` of it by path (hard links, no pack). Printed as
ratios against each. The room's repository is made by a clone (one pack, no bitmap); the
first fetch over HTTP leaves it packed with a bitmap (rooms.repository.maintenance), as
in any room.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

import pytest

from remote.tokens import access_token_create
from rooms.repository.git import git
from rooms.repository.prepare import check_clone_source
from tests.remote.git_client import person_git, remote_url
from tests.rooms.factories import make_room, make_user

RUNS = 9
FILES = 5_000


def _source(path: Path) -> Path:
    path.mkdir(parents=True)
    for n in range(FILES):
        folder = path / f"pkg{n % 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{n:04d}.py").write_text(f'"""Module {n}."""\n\n\ndef f_{n}(x):\n    return x + {n}\n' * 4)
    git("init", "--quiet", "--initial-branch", "main", cwd=path)
    git("add", "--all", cwd=path)
    git("commit", "--quiet", "-m", "5,000 files", cwd=path)
    return path


def _medians(run, ways: dict[str, list[str]], tmp_path: Path) -> dict[str, float]:
    """Each way's median clone time, the ways taken in turn (a disk's writeback slowing
    one run slows each way alike), the disk synced before each clone."""
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(RUNS):
        for name, args in ways.items():
            target = tmp_path / name
            shutil.rmtree(target, ignore_errors=True)
            os.sync()
            start = time.perf_counter()
            run("clone", "--quiet", *args, str(target))
            times[name].append(time.perf_counter() - start)
            assert len(list(target.glob("pkg*/module_*.py"))) == FILES
    return {name: statistics.median(values) for name, values in times.items()}


@pytest.mark.bench
@pytest.mark.django_db(transaction=True)
def test_a_5000_file_room_clones_over_http_near_a_local_clone(daphne_server, tmp_path, settings):
    source = _source(tmp_path / "source")
    settings.ATRIUM_CLONE_ROOTS = [tmp_path.resolve()]
    owner = make_user("ada")
    room = make_room(owner, "Big room", source=check_clone_source(str(source)))
    token = access_token_create(user=owner, name="bench").text
    bare = tmp_path / "bare.git"
    git("clone", "--quiet", "--bare", room.repo_path, str(bare), cwd=tmp_path)
    run = person_git(tmp_path / "home")

    took = _medians(run, {"http": [remote_url(daphne_server.url, room.slug, token)],
                          "no-local": ["--no-local", str(bare)], "by-path": [str(bare)]}, tmp_path)
    over_http, transport, by_path = took["http"], took["no-local"], took["by-path"]
    print(f"\n{FILES:,} files, median of {RUNS}: over the hub's HTTP {over_http * 1000:.0f} ms; "
          f"git clone --no-local of a bare copy {transport * 1000:.0f} ms "
          f"(HTTP {over_http / transport:.2f}x); git clone by path {by_path * 1000:.0f} ms "
          f"(HTTP {over_http / by_path:.2f}x)")
