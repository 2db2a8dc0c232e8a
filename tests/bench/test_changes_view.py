"""Benchmark: the session's Changes page for a 200-file change, against git writing the
same diff, measured in one run.

Run: .venv/bin/pytest -m bench tests/bench/test_changes_view.py -s -n0
A session's branch changes 200 Python files (a 40-line function each, half of it new).
Printed: the median time (RUNS) of the whole page through Django's test client (the
view, git, highlighting, the template), its first page at the page size the view uses
and all 200 on one page, each the first time (highlighting cache emptied) and again,
and of `git diff` alone writing the same change, with the ratios.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest
from django.urls import reverse

from rooms.diff_view import _marked
from rooms.repository.git import git
from rooms.repository.worktrees import worktree_commit, worktree_create
from sessions.models import Session, Task
from sessions.views.changes import PAGE_FILES
from tests.rooms.factories import make_agent, make_room, make_user

RUNS = 7
FILES = 200


def _median(action) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.mark.bench
@pytest.mark.django_db
def test_the_changes_page_of_a_200_file_change(client, tmp_path, monkeypatch):
    owner = make_user("ada")
    room = make_room(owner, "Bench room")
    repo = Path(room.repo_path)
    body = "".join(f"    total += value * {n}  # step {n}\n" for n in range(40))
    for n in range(FILES):
        (repo / f"pkg/mod_{n:03d}.py").parent.mkdir(exist_ok=True)
        (repo / f"pkg/mod_{n:03d}.py").write_text(f"def f_{n}(value):\n    total = 0\n{body}    return total\n")
    git("add", "--all", cwd=repo)
    git("commit", "--quiet", "-m", "base", cwd=repo)
    task = Task.objects.create(room=room, title="Bench", objective="Bench", created_by=owner)
    session = Session.objects.create(task=task, agent=make_agent(), attempt=1, state=Session.State.SUCCEEDED)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "wt", session_id=session.pk)
    changed = "".join(f"    total -= value // {n + 1}  # changed {n}\n" for n in range(20))
    for n in range(FILES):
        path = worktree.path / f"pkg/mod_{n:03d}.py"
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:12]) + changed + "".join(lines[32:]))
    worktree_commit(worktree=worktree, message="change 200 files")
    Session.objects.filter(pk=session.pk).update(branch=worktree.branch)
    client.force_login(owner)
    url = reverse("sessions:session_changes", args=[session.pk])

    def page() -> None:
        response = client.get(url)
        assert response.status_code == 200 and f"{FILES} files changed" in response.content.decode()

    def cold_page() -> None:
        _marked.cache_clear()
        page()

    git_alone = _median(lambda: git("diff", "--no-ext-diff", "--text", "main...refs/heads/" + worktree.branch,
                                    cwd=repo))
    figures = []
    for per_page in (PAGE_FILES, FILES):
        monkeypatch.setattr("sessions.views.changes.PAGE_FILES", per_page)
        cold, warm = _median(cold_page), _median(page)
        figures.append(f"{per_page} files a page: {cold * 1000:.0f} ms first ({cold / git_alone:.1f}x git diff), "
                       f"{warm * 1000:.0f} ms again ({warm / git_alone:.1f}x)")
    print(f"\n{FILES}-file change, median of {RUNS}, git diff alone {git_alone * 1000:.1f} ms; the Changes page, "
          + "; ".join(figures))
