"""A room's repository is kept packed with a reachability bitmap (rooms.repository.maintenance):
after a push and after a fetch over the git remote, in the background and under the
room lock, and never losing an object, reachable or not."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from remote import smart_http
from remote.tokens import access_token_create
from rooms.repository import maintenance
from rooms.repository.git import GitError, git
from rooms.repository.lock import room_repo_lock
from rooms.repository.maintenance import (
    packing_of,
    repack_needed,
    repository_repack,
    repository_repack_soon,
)
from tests.remote.git_client import person_git, remote_url
from tests.rooms.factories import make_git_repo, make_room, make_user


@pytest.fixture(autouse=True)
def _fresh_schedule(monkeypatch):
    monkeypatch.setattr(maintenance, "_repacking", {})
    monkeypatch.setattr(maintenance, "_not_before", {})
    monkeypatch.setattr(maintenance, "_failures", {})


def _cloned(tmp_path: Path) -> Path:
    """A repository as a room made from a clone has one: one pack, no bitmap."""
    source = make_git_repo(tmp_path / "source", files={f"f{n}.txt": f"{n}\n" for n in range(20)})
    repo = tmp_path / "repo"
    git("clone", "--quiet", "--no-local", str(source), str(repo), cwd=tmp_path)
    return repo


def _unreachable(repo: Path) -> list[str]:
    """Objects no ref reaches: a commit dropped from main (packed) and a blob (loose)."""
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "--allow-empty", "-m", "dropped", cwd=repo)
    dropped = git("rev-parse", "HEAD", cwd=repo).strip()
    git("repack", "--quiet", "-d", cwd=repo)  # in a pack of its own, then dropped
    git("reset", "--quiet", "--hard", "HEAD~1", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    loose = git("hash-object", "-w", "--stdin", cwd=repo, input="written, never committed\n").strip()
    return [dropped, loose]


def _bitmaps(repo: Path) -> list[Path]:
    return list((repo / ".git" / "objects" / "pack").glob("*.bitmap"))


def test_a_repository_without_a_bitmap_is_packed_with_one_and_keeps_every_object(tmp_path):
    repo = _cloned(tmp_path)
    kept = _unreachable(repo)
    assert repack_needed(repo / ".git") and not _bitmaps(repo)

    assert repository_repack(repo) is True
    assert len(_bitmaps(repo)) == 1
    assert packing_of(repo / ".git") == maintenance.Packing(packs=1, bitmapped=True, loose=0)
    for name in kept:  # in the cruft pack, which counts as none
        git("cat-file", "-e", name, cwd=repo)
    assert not repack_needed(repo / ".git")
    assert repository_repack(repo) is False


def test_loose_objects_and_packs_past_their_bounds_need_a_repack(tmp_path, monkeypatch):
    repo = _cloned(tmp_path)
    repository_repack(repo)
    monkeypatch.setattr(maintenance, "LOOSE_MAX", 2)
    for n in range(2):
        git("hash-object", "-w", "--stdin", cwd=repo, input=f"loose {n}\n")
    assert not repack_needed(repo / ".git")
    git("hash-object", "-w", "--stdin", cwd=repo, input="one too many\n")
    assert repack_needed(repo / ".git")

    repository_repack(repo)
    monkeypatch.setattr(maintenance, "PACKS_MAX", 1)
    assert not repack_needed(repo / ".git")
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "--allow-empty", "-m", "more", cwd=repo)
    git("repack", "--quiet", "-d", cwd=repo)  # a second pack, as a large push leaves
    assert repack_needed(repo / ".git")


def test_a_repository_with_no_objects_needs_no_repack(tmp_path):
    git("init", "--quiet", str(tmp_path / "empty"), cwd=tmp_path)
    assert not repack_needed(tmp_path / "empty" / ".git")


def test_a_background_repack_waits_for_no_one_and_is_not_repeated_at_once(tmp_path):
    repo = _cloned(tmp_path)

    async def soon() -> None:
        repository_repack_soon(repo)
        await asyncio.gather(*maintenance._repacking.values())

    with room_repo_lock(repo):  # a merge under way: skipped, not waited for
        asyncio.run(soon())
    assert not _bitmaps(repo)

    asyncio.run(soon())  # the next push or fetch
    assert len(_bitmaps(repo)) == 1

    _bitmaps(repo)[0].unlink()  # needed again, but it was just done
    asyncio.run(soon())
    assert not _bitmaps(repo)


def test_a_repository_whose_repack_failed_is_left_alone_for_a_while(tmp_path, monkeypatch, caplog):
    repo = _cloned(tmp_path)

    def fails(repo: Path) -> bool:
        raise GitError(["repack"], -1, "git repack took longer than 60 seconds")

    async def soon() -> None:
        repository_repack_soon(repo)
        await asyncio.gather(*maintenance._repacking.values())

    real = maintenance.repository_repack
    monkeypatch.setattr(maintenance, "repository_repack", fails)
    asyncio.run(soon())
    assert "was not repacked" in caplog.text
    monkeypatch.setattr(maintenance, "repository_repack", real)
    asyncio.run(soon())  # within REPACK_FAILED_SECONDS: not tried
    assert not _bitmaps(repo)
    maintenance._not_before[repo] = time.monotonic()  # past it
    asyncio.run(soon())
    assert len(_bitmaps(repo)) == 1


def _wait_for_a_bitmap(repo: Path) -> None:
    deadline = time.monotonic() + 30
    while not _bitmaps(repo):
        assert time.monotonic() < deadline, "the room's repository was not repacked"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_a_fetch_over_the_remote_leaves_the_room_packed(daphne_server, tmp_path):
    owner = make_user("ada")
    room = make_room(owner, "Packed room")
    repo = Path(room.repo_path)
    assert repack_needed(repo / ".git")
    url = remote_url(daphne_server.url, room.slug, access_token_create(user=owner, name="laptop").text)
    run = person_git(tmp_path / "home")
    run("clone", "--quiet", url, str(tmp_path / "first"))
    _wait_for_a_bitmap(repo)
    run("clone", "--quiet", url, str(tmp_path / "second"))  # served from the bitmap
    assert run("rev-parse", "HEAD", cwd=tmp_path / "second").stdout.strip() == git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.mark.django_db(transaction=True)
def test_a_push_over_the_remote_leaves_the_room_packed(daphne_server, tmp_path):
    owner = make_user("ada")
    room = make_room(owner, "Pushed room")
    repo = Path(room.repo_path)
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"
    run("clone", "--quiet", str(repo), str(clone))  # by path: no fetch over the remote
    (clone / "notes.md").write_text("a push\n")
    run("add", "notes.md", cwd=clone)
    run("commit", "--quiet", "-m", "notes", cwd=clone)
    url = remote_url(daphne_server.url, room.slug, access_token_create(user=owner, name="laptop").text)
    run("push", "--quiet", url, "main:feature", cwd=clone)
    _wait_for_a_bitmap(repo)
    assert git("rev-parse", "refs/heads/feature", cwd=repo).strip() == run("rev-parse", "HEAD", cwd=clone).stdout.strip()


def test_http_backend_is_started_as_the_program_itself():
    program = smart_http.http_backend()
    assert len(program) == 1 and Path(program[0]).name == "git-http-backend" and Path(program[0]).is_absolute()


def test_a_repack_stopped_midway_leaves_no_half_written_pack_and_waits_longer_each_time(tmp_path, monkeypatch):
    repo = _cloned(tmp_path)
    pack_dir = repo / ".git" / "objects" / "pack"
    kept = {path.name for path in pack_dir.iterdir()}

    def stopped(*args, **kwargs):  # as git killed at the timeout leaves it
        (pack_dir / "tmp_pack_a1b2c3").write_bytes(b"PACK" + b"\0" * 1024)
        (pack_dir / ".tmp-123-pack-x.idx").write_bytes(b"\0")
        raise GitError(["repack"], -9, "git repack took longer than 60 seconds")

    monkeypatch.setattr(maintenance, "git", stopped)
    with pytest.raises(GitError):
        repository_repack(repo)
    assert {path.name for path in pack_dir.iterdir()} == kept

    waits = []
    for _ in range(3):
        maintenance._not_before.pop(repo, None)
        maintenance._repack_if_free(repo)
        waits.append(maintenance._not_before[repo] - time.monotonic())
    assert waits[0] == pytest.approx(maintenance.REPACK_FAILED_SECONDS, abs=5)
    assert waits[1] == pytest.approx(2 * waits[0], abs=5) and waits[2] == pytest.approx(4 * waits[0], abs=5)
