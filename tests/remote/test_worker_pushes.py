"""Issue 32, point 1 (the worker's credential): a worker on a machine of its own fetches
its session's room repository and pushes the session's branch over the git remote, with
a token bound to the session's lease, driven by a real git against a real Daphne. It moves
that branch forward and nothing else, and once the lease is another worker's (or gone)
the token opens nothing."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from rooms.models import Message
from rooms.repository.git import git
from rooms.repository.lock import room_repo_lock
from rooms.worker_tokens import WORKER_TOKEN_PREFIX, worker_token_mint, worker_token_read
from sessions.models import Session, SessionEvent, Task
from tests.remote.git_client import person_git, remote_url
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def _running(room, owner: str) -> Session:
    task = Task.objects.create(room=room, title="Work", objective="Work", created_by=room.owner)
    return Session.objects.create(task=task, agent=make_agent(), state="running", lease_owner=owner,
                                  lease_expires_at=timezone.now() + timedelta(minutes=5))


def _ref(room, ref: str) -> str:
    return git("rev-parse", "--verify", "--quiet", ref, cwd=Path(room.repo_path), check=False).strip()


def test_a_worker_pushes_its_sessions_branch_and_nothing_else_while_it_holds_the_lease(daphne_server, tmp_path):
    room = make_room(make_user("ada"), "Workers' room")
    other_room = make_room(make_user("bob"), "Another room")
    session = _running(room, "worker-1@b:41")
    other = _running(room, "worker-1@b:41")
    token = worker_token_mint(room_id=room.pk, session_id=session.pk, owner="worker-1@b:41")
    run = person_git(tmp_path / "home")
    clone = tmp_path / "mirror"
    run("clone", "--quiet", "--bare", remote_url(daphne_server.url, room.slug, token), str(clone))
    main_tip = _ref(room, "refs/heads/main")
    assert run("rev-parse", "main", cwd=clone).stdout.strip() == main_tip
    messages = Message.objects.filter(room=room).count()

    work = tmp_path / "work"
    run("clone", "--quiet", str(clone), str(work))
    run("remote", "set-url", "origin", remote_url(daphne_server.url, room.slug, token), cwd=work)
    run("checkout", "--quiet", "-b", f"atrium/session-{session.pk}", cwd=work)
    (work / "work.txt").write_text("the session's\n")
    run("add", "work.txt", cwd=work)
    run("commit", "--quiet", "-m", "session work", cwd=work)
    first = run("rev-parse", "HEAD", cwd=work).stdout.strip()
    run("push", "--quiet", "origin", f"HEAD:refs/heads/atrium/session-{session.pk}", cwd=work)
    assert _ref(room, f"refs/heads/atrium/session-{session.pk}") == first
    assert Message.objects.filter(room=room).count() == messages  # the session's news, not the room's
    told = SessionEvent.objects.get(session=session, kind="branch.pushed").payload
    assert told == {"ref": f"refs/heads/atrium/session-{session.pk}", "old": None, "new": first}

    def refused(*push_args: str, says: str) -> None:
        done = run("push", "origin", *push_args, cwd=work, check=False)
        assert done.returncode != 0 and says in done.stderr, done.stderr

    refused("HEAD:main", says="a worker pushes its session's branch")
    refused(f"HEAD:refs/heads/atrium/session-{other.pk}", says="and nothing else")
    refused("HEAD:refs/tags/v1", says="and nothing else")
    refused(f":refs/heads/atrium/session-{session.pk}", says="not deleted by its worker")
    run("commit", "--quiet", "--amend", "-m", "rewritten", cwd=work)
    refused("--force", f"HEAD:refs/heads/atrium/session-{session.pk}", says="not a fast-forward")
    run("reset", "--quiet", "--hard", first, cwd=work)
    (work / ".atrium").mkdir()
    (work / ".atrium" / "x.md").write_text("not the hub's\n")
    run("add", ".atrium", cwd=work)
    run("commit", "--quiet", "-m", "hub files", cwd=work)
    refused(f"HEAD:refs/heads/atrium/session-{session.pk}", says="only the hub writes .atrium/")
    run("reset", "--quiet", "--hard", first, cwd=work)
    assert _ref(room, "refs/heads/main") == main_tip
    assert _ref(room, f"refs/heads/atrium/session-{session.pk}") == first
    assert _ref(room, f"refs/heads/atrium/session-{other.pk}") == ""

    # Not its room: as a room one is not in; nor a token naming another room for the session.
    elsewhere = run("ls-remote", remote_url(daphne_server.url, other_room.slug, token), check=False)
    assert elsewhere.returncode != 0 and "not found" in elsewhere.stderr.lower()
    crossed = worker_token_mint(room_id=other_room.pk, session_id=session.pk, owner="worker-1@b:41")
    for slug in (room.slug, other_room.slug):
        assert run("ls-remote", remote_url(daphne_server.url, slug, crossed), check=False).returncode != 0

    # The lease moves to another worker while the push waits for the room's lock: refused
    # once it has the lock, before git moves anything.
    (work / "waited.txt").write_text("waited\n")
    run("add", "waited.txt", cwd=work)
    run("commit", "--quiet", "-m", "waited", cwd=work)
    with room_repo_lock(Path(room.repo_path)):
        waiting = subprocess.Popen(["git", "push", "origin", f"HEAD:refs/heads/atrium/session-{session.pk}"],
                                   cwd=work, env=run.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)  # the push is in, waiting for the lock
        Session.objects.filter(pk=session.pk).update(lease_owner="worker-2@c:7")
    _, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode != 0, stderr
    assert _ref(room, f"refs/heads/atrium/session-{session.pk}") == first
    Session.objects.filter(pk=session.pk).update(lease_owner="worker-1@b:41")
    run("reset", "--quiet", "--hard", first, cwd=work)

    # The lease is another worker's now: the token opens nothing, to read or to push.
    Session.objects.filter(pk=session.pk).update(lease_owner="worker-2@c:7")
    (work / "more.txt").write_text("late\n")
    run("add", "more.txt", cwd=work)
    run("commit", "--quiet", "-m", "late work", cwd=work)
    def shut_out() -> None:
        late = run("push", "origin", f"HEAD:refs/heads/atrium/session-{session.pk}", cwd=work, check=False)
        assert late.returncode != 0 and "Authentication failed" in late.stderr, late.stderr
        assert run("ls-remote", remote_url(daphne_server.url, room.slug, token), check=False).returncode != 0
        assert _ref(room, f"refs/heads/atrium/session-{session.pk}") == first

    shut_out()
    # So with a lease that ran out, held by nobody, and once the session is gone.
    Session.objects.filter(pk=session.pk).update(lease_owner="worker-1@b:41",
                                                 lease_expires_at=timezone.now() - timedelta(seconds=1))
    shut_out()
    Session.objects.filter(pk=session.pk).delete()
    shut_out()


def test_only_a_token_the_hub_signed_names_a_session():
    token = worker_token_mint(room_id=3, session_id=12, owner="worker-1@b:41")
    assert token.startswith(WORKER_TOKEN_PREFIX)
    read = worker_token_read(token)
    assert (read.room_id, read.session_id, read.owner) == (3, 12, "worker-1@b:41")
    altered = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert worker_token_read(altered) is None
    _payload, stamp, signature = token.removeprefix(WORKER_TOKEN_PREFIX).split(":")
    other_payload = worker_token_mint(room_id=3, session_id=13, owner="worker-1@b:41").removeprefix(WORKER_TOKEN_PREFIX)
    assert worker_token_read(f"{WORKER_TOKEN_PREFIX}{other_payload.split(':')[0]}:{stamp}:{signature}") is None
    assert worker_token_read("atr-pat-" + token.removeprefix(WORKER_TOKEN_PREFIX)) is None
    assert worker_token_read(token + "x" * 400) is None
    assert worker_token_read(None) is None and worker_token_read("") is None
    with pytest.raises(ValueError, match="too long"):
        worker_token_mint(room_id=3, session_id=12, owner="w" * 400)
