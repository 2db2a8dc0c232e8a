"""The session's Changes page and patch, through Django's test client: who may read
them, what they show, and the live page's "nothing moved" answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from rooms.repository.worktrees import worktree_commit, worktree_create
from sessions.models import Session, Task
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db


def _session_with_work(tmp_path: Path, *, files: int = 3):
    owner, viewer = make_user("ada"), make_user("vic")
    room = make_room(owner, "Changes room", viewers=[viewer])
    task = Task.objects.create(room=room, title="Work", objective="Work", created_by=owner)
    session = Session.objects.create(task=task, agent=make_agent(), attempt=1, state=Session.State.RUNNING)
    worktree = worktree_create(repo=Path(room.repo_path), worktrees_dir=tmp_path / "wt", session_id=session.pk)
    for n in range(files):
        (worktree.path / f"src/mod_{n}.py").parent.mkdir(exist_ok=True)
        (worktree.path / f"src/mod_{n}.py").write_text(f"def f_{n}():\n    return '<{n}>'\n")
    worktree_commit(worktree=worktree, message="work")
    Session.objects.filter(pk=session.pk).update(branch=worktree.branch, worktree_path=str(worktree.path))
    session.refresh_from_db()
    return session, worktree, owner, viewer


def test_a_viewer_reads_the_change_and_a_stranger_finds_nothing(client, tmp_path):
    session, _worktree, _owner, viewer = _session_with_work(tmp_path)
    client.force_login(viewer)
    page = client.get(reverse("sessions:session_changes", args=[session.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "3 files changed" in text and "+6" in text and "src/mod_2.py" in text
    assert "&#x27;&lt;2&gt;&#x27;" in text or "&lt;2&gt;" in text  # the code, escaped and highlighted
    assert 'class="k">def</span>' in text
    assert 'hx-trigger="every 5s"' in text  # live while it runs
    client.force_login(make_user("sam"))
    assert client.get(reverse("sessions:session_changes", args=[session.pk])).status_code == 404
    assert client.get(reverse("sessions:session_patch", args=[session.pk])).status_code == 404


def test_the_live_page_is_sent_again_only_when_the_branch_moved(client, tmp_path):
    session, worktree, owner, _viewer = _session_with_work(tmp_path)
    client.force_login(owner)
    url = reverse("sessions:session_changes", args=[session.pk])
    first = client.get(url, headers={"HX-Request": "true"})
    seen = first.context["seen"]
    assert client.get(url, {"seen": seen}, headers={"HX-Request": "true"}).status_code == 204
    (worktree.path / "later.txt").write_text("later\n")
    worktree_commit(worktree=worktree, message="later")
    moved = client.get(url, {"seen": seen}, headers={"HX-Request": "true"})
    assert moved.status_code == 200 and "4 files changed" in moved.content.decode()
    Session.objects.filter(pk=session.pk).update(state=Session.State.SUCCEEDED)
    ended = client.get(url, {"seen": moved.context["seen"]}, headers={"HX-Request": "true"})
    assert ended.status_code == 200 and "hx-trigger" not in ended.content.decode()


def test_the_patch_downloads(client, tmp_path):
    session, _worktree, owner, _viewer = _session_with_work(tmp_path)
    client.force_login(owner)
    patch = client.get(reverse("sessions:session_patch", args=[session.pk]))
    assert patch.status_code == 200 and patch["Content-Disposition"].startswith("attachment;")
    assert b"+++ b/src/mod_0.py" in patch.content


def test_many_files_are_paged(client, tmp_path, monkeypatch):
    monkeypatch.setattr("sessions.views.changes.PAGE_FILES", 2)
    session, _worktree, owner, _viewer = _session_with_work(tmp_path, files=5)
    client.force_login(owner)
    url = reverse("sessions:session_changes", args=[session.pk])
    first = client.get(url)
    assert [file.path for file, *_ in first.context["files"]] == ["src/mod_0.py", "src/mod_1.py"]
    last = client.get(url, {"page": 3})
    assert [file.path for file, *_ in last.context["files"]] == ["src/mod_4.py"]
    assert "Files 5–5 of 5" in last.content.decode()


def test_a_session_without_a_branch_says_so(client, tmp_path):
    owner = make_user("ada")
    room = make_room(owner)
    task = Task.objects.create(room=room, title="T", objective="T", created_by=owner)
    session = Session.objects.create(task=task, agent=make_agent(), attempt=1)
    client.force_login(owner)
    page = client.get(reverse("sessions:session_changes", args=[session.pk]))
    assert page.status_code == 200 and "has not started work" in page.content.decode()
