"""The room repository as a git remote, driven by a real git client against a real
Daphne: people clone, pull and push with their access tokens; what a viewer, a stranger,
a revoked token or a hostile push may do is refused, and the room is left as it was."""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from remote.tokens import access_token_create, access_token_revoke
from rooms.models import Message
from rooms.repository.git import git
from rooms.repository.lock import room_repo_lock
from rooms.repository.worktrees import worktree_bring_in, worktree_commit, worktree_create
from tests.remote.git_client import person_git, remote_url
from tests.rooms.factories import make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def _tip(room, ref: str = "main") -> str:
    return git("rev-parse", f"refs/heads/{ref}", cwd=Path(room.repo_path)).strip()


def _commit(run, clone: Path, name: str, text: str, message: str = "a change") -> str:
    (clone / name).parent.mkdir(parents=True, exist_ok=True)
    (clone / name).write_text(text)
    run("add", "--all", cwd=clone)
    run("commit", "--quiet", "-m", message, cwd=clone)
    return run("rev-parse", "HEAD", cwd=clone).stdout.strip()


def _refused(run, clone: Path, room, start: str, *push_args: str, says: str) -> None:
    """The push fails saying ``says``, and the room is as it was: main where it was, its
    checkout clean."""
    done = run("push", "origin", *push_args, cwd=clone, check=False)
    assert done.returncode != 0, done.stderr
    assert says in done.stderr, done.stderr
    assert _tip(room) == start
    assert git("status", "--porcelain", cwd=Path(room.repo_path)).strip() == ""


@pytest.fixture
def team(tmp_path):
    owner, viewer, stranger = make_user("ada"), make_user("vic"), make_user("sam")
    room = make_room(owner, "Remote room", viewers=[viewer])
    tokens = {person.get_username(): access_token_create(user=person, name="laptop").text
              for person in (owner, viewer, stranger)}
    return room, tokens


def test_a_member_clones_pushes_and_pulls_and_a_session_sees_the_push(daphne_server, team, tmp_path):
    room, tokens = team
    run = person_git(tmp_path / "home")
    url = remote_url(daphne_server.url, room.slug, tokens["ada"])
    clone = tmp_path / "clone"
    run("clone", "--quiet", url, str(clone))
    assert run("rev-parse", "HEAD", cwd=clone).stdout.strip() == _tip(room)

    # A session already at work, before the push.
    worktree = worktree_create(repo=Path(room.repo_path), worktrees_dir=tmp_path / "worktrees", session_id=7)

    pushed = _commit(run, clone, "docs/notes.md", "from a person\n", "Notes from a person")
    done = run("push", "origin", "main", cwd=clone)
    assert "main -> main" in done.stderr
    assert _tip(room) == pushed
    # main's checkout moved with it (the hub's merges build on the files there)
    assert (Path(room.repo_path) / "docs" / "notes.md").read_text() == "from a person\n"
    assert git("status", "--porcelain", cwd=Path(room.repo_path)).strip() == ""
    told = Message.objects.filter(room=room, kind=Message.Kind.SYSTEM).order_by("-seq").first()
    assert told.text.startswith("ada pushed main ") and pushed[:7] in told.text

    # The running session takes it at its next bring-in.
    (worktree.path / "work.txt").write_text("the session's\n")
    worktree_commit(worktree=worktree, message="session work")
    brought = worktree_bring_in(worktree=worktree)
    assert brought.conflicts == () and any("Notes from a person" in line for line in brought.merged_meanwhile)

    # A branch of one's own, and a pull of what the hub added meanwhile.
    run("push", "origin", "main:feature/idea", cwd=clone)
    assert _tip(room, "feature/idea") == pushed
    other = tmp_path / "other"
    run("clone", "--quiet", url, str(other))
    later = _commit(run, other, "later.txt", "later\n")
    run("push", "--quiet", "origin", "main", cwd=other)
    run("pull", "--quiet", "--ff-only", cwd=clone)
    assert run("rev-parse", "HEAD", cwd=clone).stdout.strip() == later
    # The sessions' branches can be fetched and read.
    run("fetch", "--quiet", "origin", "atrium/session-7", cwd=clone)


def test_a_viewer_clones_and_pulls_but_cannot_push(daphne_server, team, tmp_path):
    room, tokens = team
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"
    run("clone", "--quiet", remote_url(daphne_server.url, room.slug, tokens["vic"]), str(clone))
    before = _tip(room)
    _commit(run, clone, "viewer.txt", "no\n")
    refused = run("push", "origin", "main", cwd=clone, check=False)
    assert refused.returncode != 0 and "403" in refused.stderr
    assert _tip(room) == before


def test_strangers_missing_and_revoked_tokens_get_nothing(daphne_server, team, tmp_path):
    room, tokens = team
    run = person_git(tmp_path / "home")
    stranger = run("clone", remote_url(daphne_server.url, room.slug, tokens["sam"]), str(tmp_path / "s"), check=False)
    assert stranger.returncode != 0 and "not found" in stranger.stderr.lower()
    nobody = run("clone", remote_url(daphne_server.url, room.slug), str(tmp_path / "n"), check=False)
    assert nobody.returncode != 0 and not (tmp_path / "n" / "README.md").exists()
    wrong = run("clone", remote_url(daphne_server.url, room.slug, "atr-pat-" + "x" * 43), str(tmp_path / "w"),
                check=False)
    assert wrong.returncode != 0
    # A missing room answers as a room one is not in: nothing to learn about slugs.
    missing = run("clone", remote_url(daphne_server.url, "no-such-room", tokens["ada"]), str(tmp_path / "m"),
                  check=False)
    assert "not found" in missing.stderr.lower()

    ada = room.owner
    token = ada.access_tokens.get()
    run("clone", "--quiet", remote_url(daphne_server.url, room.slug, tokens["ada"]), str(tmp_path / "ok"))
    access_token_revoke(user=ada, token_id=token.pk)
    revoked = run("clone", remote_url(daphne_server.url, room.slug, tokens["ada"]), str(tmp_path / "r"), check=False)
    assert revoked.returncode != 0 and not (tmp_path / "r").exists()


def _status(url: str, **headers: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_only_the_smart_protocol_is_served(daphne_server, team):
    room, tokens = team
    import base64

    auth = "Basic " + base64.b64encode(f"ada:{tokens['ada']}".encode()).decode()
    base = f"{daphne_server.url}/rooms/{room.slug}.git"
    assert _status(f"{base}/info/refs?service=git-upload-pack", Authorization=auth) == 200
    for dumb in ("HEAD", "config", "info/refs", "objects/info/packs", "atrium-room.lock"):
        assert _status(f"{base}/{dumb}", Authorization=auth) == 404, dumb
    assert _status(f"{base}/info/refs?service=git-upload-pack") == 401
    assert _status(f"{base}/info/refs?service=git-upload-pack", Authorization="Basic !!!") == 401


HOOK_MARK = "hook-ran"


def test_pushes_that_would_change_the_room_in_ways_it_forbids_are_refused(daphne_server, team, tmp_path):
    room, tokens = team
    repo = Path(room.repo_path)
    # A hook in the room repository's own folder (as a shell command there could have
    # left one): never run by a push.
    for name in ("pre-receive", "update", "post-receive", "post-update", "push-to-checkout"):
        hook = repo / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {repo / '.git' / HOOK_MARK}\n")
        hook.chmod(0o755)
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"
    run("clone", "--quiet", remote_url(daphne_server.url, room.slug, tokens["ada"]), str(clone))
    start = _tip(room)

    def refused(*push_args: str, says: str) -> None:
        _refused(run, clone, room, start, *push_args, says=says)

    # main is never rewritten: a commit beside it, forced
    run("checkout", "--quiet", "-b", "beside", "main", cwd=clone)
    run("commit", "--quiet", "--amend", "--allow-empty", "-m", "rewritten", cwd=clone)
    refused("--force", "beside:main", says="not a fast-forward")
    refused(":main", says="main cannot be deleted")
    refused("beside:atrium/session-1", says="read-only for people")
    refused("beside:refs/notes/x", says="only branches and tags")

    run("checkout", "--quiet", "main", cwd=clone)
    # a submodule (gitlink)
    sub = run("rev-parse", "HEAD", cwd=clone).stdout.strip()
    run("update-index", "--add", "--cacheinfo", f"160000,{sub},vendored", cwd=clone)
    run("commit", "--quiet", "-m", "a submodule", cwd=clone)
    refused("main", says="is a submodule")
    refused("main:feature", says="is a submodule")
    run("reset", "--quiet", "--hard", "origin/main", cwd=clone)

    # the hub's own files
    _commit(run, clone, ".atrium/tasks/1/intent.md", "mine now\n")
    refused("main", says="only the hub writes .atrium/")
    run("reset", "--quiet", "--hard", "origin/main", cwd=clone)

    # a nested .git folder, spelt otherwise: git's own object check (receive.fsckObjects) refuses it
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input="[core]\n", capture_output=True, text=True,
                          cwd=clone, check=True).stdout.strip()
    inner = subprocess.run(["git", "mktree"], input=f"100644 blob {blob}\tconfig\n", capture_output=True, text=True,
                           cwd=clone, check=True).stdout.strip()
    listing = run("ls-tree", "HEAD", cwd=clone).stdout
    tree = subprocess.run(["git", "mktree"], input=listing + f"040000 tree {inner}\t.GIT\n", capture_output=True,
                          text=True, cwd=clone, check=True).stdout.strip()
    commit = run("commit-tree", tree, "-p", "HEAD", "-m", "nested", cwd=clone).stdout.strip()
    refused(f"{commit}:refs/heads/main", says=".git")

    assert not (repo / ".git" / HOOK_MARK).exists()
    # and an allowed push still goes through, the room's hooks still not run
    pushed = _commit(run, clone, "fine.txt", "fine\n")
    run("push", "origin", "main", cwd=clone)
    assert _tip(room) == pushed
    assert not (repo / ".git" / HOOK_MARK).exists()


def test_names_kinds_and_content_no_push_may_bring(daphne_server, team, tmp_path):
    room, tokens = team
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"
    run("clone", "--quiet", remote_url(daphne_server.url, room.slug, tokens["ada"]), str(clone))
    start = _tip(room)

    def refused(*push_args: str, says: str) -> None:
        _refused(run, clone, room, start, *push_args, says=says)

    refused("main:refs/tags/main", says="a branch has that name")  # would stand for main to the hub
    refused("main:refs/heads/atrium", says="read-only for people")
    refused("main:refs/tags/atrium/session-1", says="read-only for people")
    tree = run("rev-parse", "HEAD^{tree}", cwd=clone).stdout.strip()
    run("tag", "a-tree", tree, cwd=clone)
    refused("refs/tags/a-tree", says="not a commit")
    _commit(run, clone, ".atrium/mine.md", "mine\n")
    refused("main:refs/heads/side", says="only the hub writes .atrium/")  # on any branch
    run("reset", "--quiet", "--hard", "origin/main", cwd=clone)
    run("push", "--quiet", "origin", "main:refs/tags/v1", cwd=clone)
    refused("main:refs/heads/v1", says="a tag has that name")
    assert Message.objects.filter(room=room, text__contains="pushed tag v1").exists()


def test_a_push_past_the_checkout_bounds_is_refused(transactional_db, team, tmp_path):
    from tests.conftest import start_daphne

    server = start_daphne(tmp_path / "daphne.log", ATRIUM_CHECKOUT_MAX_FILES="20")
    try:
        room, tokens = team
        run = person_git(tmp_path / "home")
        clone = tmp_path / "clone"
        run("clone", "--quiet", remote_url(server.url, room.slug, tokens["ada"]), str(clone))
        start = _tip(room)
        for n in range(25):
            (clone / f"many/{n}.txt").parent.mkdir(exist_ok=True)
            (clone / f"many/{n}.txt").write_text(f"{n}\n")
        run("add", "--all", cwd=clone)
        run("commit", "--quiet", "-m", "many files", cwd=clone)
        done = run("push", "origin", "main", cwd=clone, check=False)
        assert done.returncode != 0 and "more than the 20 files" in done.stderr, done.stderr
        assert _tip(room) == start
    finally:
        server.hub_process.stop()


def _post(url: str, body: bytes, **headers: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_compressed_bodies_are_bounded_before_git_reads_them(daphne_server, team):
    import base64
    import gzip

    room, tokens = team
    auth = "Basic " + base64.b64encode(f"ada:{tokens['ada']}".encode()).decode()
    base = f"{daphne_server.url}/rooms/{room.slug}.git"
    have = b"0032have " + b"1" * 40 + b"\n"
    bomb = gzip.compress(b"0011command=fetch0001" + have * 400_000)  # ~20 MB inflated, ~60 KB sent
    status, text = _post(f"{base}/git-upload-pack", bomb, Authorization=auth, **{
        "Content-Type": "application/x-git-upload-pack-request", "Content-Encoding": "gzip",
        "Git-Protocol": "version=2"})
    assert status == 413 and "at most 10 MB" in text
    status, text = _post(f"{base}/git-receive-pack", gzip.compress(b"0000"), Authorization=auth, **{
        "Content-Type": "application/x-git-receive-pack-request", "Content-Encoding": "gzip"})
    assert status == 415
    many = b"".join(b"%04x" % (len(line) + 4) + line for line in
                    (f"{'0' * 40} {'1' * 40} refs/heads/b{n}\n".encode() for n in range(1_001))) + b"0000"
    status, text = _post(f"{base}/git-receive-pack", many, Authorization=auth,
                         **{"Content-Type": "application/x-git-receive-pack-request"})
    assert status == 413 and "at most 1,000 refs" in text
    assert _tip(room) == git("rev-parse", "HEAD", cwd=Path(room.repo_path)).strip()


def test_a_push_whose_client_goes_away_is_finished_and_the_room_stays_usable(daphne_server, team, tmp_path):
    import os

    room, tokens = team
    repo = Path(room.repo_path)
    run = person_git(tmp_path / "home")
    clone = tmp_path / "clone"
    run("clone", "--quiet", remote_url(daphne_server.url, room.slug, tokens["ada"]), str(clone))
    (clone / "big.bin").write_bytes(os.urandom(40 * 1024 * 1024))
    pushed = _commit(run, clone, "small.txt", "small\n", "A big file")
    import time

    # The room is busy (a merge, say): the push waits for the room lock in the hub, its
    # whole body received, while its client gives up.
    with room_repo_lock(repo):
        client = subprocess.Popen(["git", "push", "origin", "main"], cwd=clone, env=run.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)
        assert client.poll() is None, "the push did not wait for the room"
        client.kill()
        client.wait()
        time.sleep(0.5)
    deadline = time.monotonic() + 60
    while _tip(room) != pushed:
        assert time.monotonic() < deadline, "the push was not finished"
        time.sleep(0.1)
    while not Message.objects.filter(room=room, text__contains=f"..{pushed[:7]}").exists():
        assert time.monotonic() < deadline, "the room was not told"
        time.sleep(0.1)
    left = [lock for lock in (repo / ".git").rglob("*.lock") if not lock.name.startswith("atrium-")]
    assert not left and git("status", "--porcelain", cwd=repo).strip() == ""
    later = _commit(run, clone, "later.txt", "later\n")
    run("push", "--quiet", "origin", "main", cwd=clone)
    assert _tip(room) == later
