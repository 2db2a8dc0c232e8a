"""The room's code browser: any branch, tag or commit, folders and files, links shown not
followed, nothing but the repository's own names taken as a ref, and only for people
in the room."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse

from rooms.repository.git import git
from tests.rooms.factories import make_room, make_user

pytestmark = pytest.mark.django_db


def _commit(repo: Path, message: str) -> str:
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.fixture
def room_with_code():
    owner, viewer = make_user("ada"), make_user("vic")
    room = make_room(owner, "Code room", viewers=[viewer])
    repo = Path(room.repo_path)
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("def main():\n    return '<b>'\n")
    (repo / "data.bin").write_bytes(b"\x00\x01\x02")
    os.symlink("/etc/passwd", repo / "escape")
    first = _commit(repo, "Some code")
    git("branch", "atrium/session-4", cwd=repo)
    git("tag", "v1", cwd=repo)
    (repo / "src" / "app.py").write_text("def main():\n    return 'changed'\n")
    _commit(repo, "Change it")
    return room, viewer, first


def _get(client, room, **query):
    return client.get(reverse("rooms:code", args=[room.slug]), query)


def test_a_viewer_browses_folders_files_and_commits(client, room_with_code):
    room, viewer, first = room_with_code
    client.force_login(viewer)
    root = _get(client, room)
    assert root.status_code == 200
    names = [entry.name for entry in root.context["entries"]]
    assert names[0] == "src" and {"data.bin", "escape"} <= set(names)  # folders first
    assert root.context["entries"][names.index("escape")].kind == "link"
    assert [c.subject for c in root.context["commits"]][:2] == ["Change it", "Some code"]
    file = _get(client, room, path="src/app.py").content.decode()
    assert 'class="k">def</span>' in file and "changed" in file
    at_tag = _get(client, room, ref="v1", path="src/app.py").content.decode()
    assert "&#x27;&lt;b&gt;&#x27;" in at_tag or "&lt;b&gt;" in at_tag
    assert "&lt;b&gt;" in _get(client, room, ref="atrium/session-4", path="src/app.py").content.decode()
    assert "&lt;b&gt;" in _get(client, room, ref=first[:12], path="src/app.py").content.decode()
    assert "A binary file" in _get(client, room, path="data.bin").content.decode()
    link = _get(client, room, path="escape").content.decode()
    assert "/etc/passwd" in link and "root:" not in link


@pytest.mark.parametrize("query", [
    {"ref": "main@{1}"}, {"ref": ":/Some"}, {"ref": "--output=/tmp/x"}, {"ref": "HEAD~1"}, {"ref": "nope"},
    {"path": "missing.txt"}, {"path": "../etc/passwd"}, {"path": "src/../README.md"}, {"ref": "a\x00b"},
])
def test_anything_but_the_repositorys_names_is_not_found(client, room_with_code, query):
    room, viewer, _first = room_with_code
    client.force_login(viewer)
    assert _get(client, room, **query).status_code == 404


def test_a_stranger_finds_no_room(client, room_with_code):
    room, _viewer, _first = room_with_code
    client.force_login(make_user("sam"))
    assert _get(client, room).status_code == 404
