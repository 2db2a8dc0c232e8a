"""What a worker on another machine asks the hub to do where the room's repository is
(``POST /rooms/<slug>.git/atrium/<step>``, remote/worker_steps.py), against a real Daphne:
only with the token of a worker holding the session's lease, only for that session's
branch, and every wrong request told why with nothing changed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from django.test import override_settings
from django.utils import timezone

from remote.tokens import access_token_create
from rooms.repository.git import git
from rooms.worker_tokens import worker_token_mint
from sessions.models import Session, Task
from sessions.worker.room_git import CopyRoomGit, RoomGit
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "worker-1@b:41"


def _running(room) -> Session:
    task = Task.objects.create(room=room, title="Add a file", objective="Add it", created_by=room.owner)
    return Session.objects.create(task=task, agent=make_agent(), state="running", lease_owner=OWNER,
                                  lease_expires_at=timezone.now() + timedelta(minutes=5))


def _ask(server, slug: str, step: str, token: str | None, **kwargs) -> httpx2.Response:
    auth = ("worker", token) if token else None
    return httpx2.post(f"{server.url}/rooms/{slug}.git/atrium/{step}", auth=auth, timeout=60, **kwargs)


def test_the_hub_merges_a_workers_pushed_branch_once_and_says_what_came_of_it(daphne_server, tmp_path):
    room = make_room(make_user("ada"), "Merging room")
    session = _running(room)
    repo, main_before = Path(room.repo_path), git("rev-parse", "main", cwd=Path(room.repo_path)).strip()
    with override_settings(HUB_URL=daphne_server.url, COPIES_DIR=tmp_path / "copies",
                           WORKTREES_DIR=tmp_path / "worktrees"):
        copy = CopyRoomGit(room, session_id=session.pk, owner=OWNER)
        worktree = copy.worktree(session.pk)
        (worktree.path / "added.txt").write_text("from a worker elsewhere\n")
        git("add", "added.txt", cwd=worktree.path)
        git("commit", "--quiet", "-m", "add", cwd=worktree.path)
        merged = copy.merge(worktree.branch, title=session.task.title)
        again = copy.merge(worktree.branch, title=session.task.title)
    assert merged.status == "merged" and merged.main_before == main_before
    assert git("rev-parse", "main", cwd=repo).strip() == merged.main_after
    assert git("log", "-1", "--format=%s", "main", cwd=repo).strip() == f"Merge {worktree.branch}: Add a file"
    assert (repo / "added.txt").read_text() == "from a worker elsewhere\n"  # main's checkout moved too
    assert again.status == "up_to_date" and again.main_after == merged.main_after
    # What the worker reads afterwards is main as the hub has it.
    assert git("rev-parse", "main", cwd=copy.repo).strip() == merged.main_after


def test_only_the_worker_holding_the_session_asks_and_a_wrong_request_is_told_why(daphne_server):
    ada = make_user("ada")
    room, other_room = make_room(ada, "Room"), make_room(ada, "Other room")
    session = _running(room)
    token = worker_token_mint(room_id=room.pk, session_id=session.pk, owner=OWNER)
    main = git("rev-parse", "main", cwd=Path(room.repo_path)).strip()

    def refused(status: int, says: str, *args, **kwargs) -> None:
        answer = _ask(daphne_server, *args, **kwargs)
        assert answer.status_code == status and says in answer.text, (answer.status_code, answer.text)

    refused(401, "Only a worker running a session", room.slug, "merge", None)
    refused(401, "Only a worker running a session", room.slug, "merge", access_token_create(user=ada, name="x").text)
    refused(404, "Repository not found", other_room.slug, "merge", token)
    refused(400, "No such step: 'rebase'", room.slug, "rebase", token)
    refused(400, "The body is not JSON", room.slug, "propose", token, content="{not json",
            headers={"Content-Type": "application/json"})
    refused(400, "A proposal needs its title", room.slug, "propose", token, json={"body": "b"})
    refused(400, "A merge names the commit the worker pushed", room.slug, "merge", token, json={"tip": "main"})
    assert httpx2.get(f"{daphne_server.url}/rooms/{room.slug}.git/atrium/merge").status_code == 405
    # A room with no upstream: nothing to bring in, said so.
    brought = _ask(daphne_server, room.slug, "bring-in", token)
    assert brought.status_code == 200 and brought.json() == {"said": None}
    # The branch was never pushed: the merge fails, saying so, and main stays.
    refused(409, "could not merge", room.slug, "merge", token, json={"tip": "0" * 40})
    # Once the lease is another worker's, the token opens nothing.
    Session.objects.filter(pk=session.pk).update(lease_owner="worker-2@c:7")
    refused(401, f"does not hold session {session.pk}", room.slug, "bring-in", token)
    assert git("rev-parse", "main", cwd=Path(room.repo_path)).strip() == main


def test_a_worker_whose_lease_moved_cannot_merge_what_the_next_one_pushed(daphne_server, tmp_path):
    room = make_room(make_user("ada"), "Two workers' room")
    session = _running(room)
    repo = Path(room.repo_path)
    main_before = git("rev-parse", "main", cwd=repo).strip()

    def on(machine: str, owner: str):
        Session.objects.filter(pk=session.pk).update(lease_owner=owner)
        return override_settings(HUB_URL=daphne_server.url, COPIES_DIR=tmp_path / machine / "copies",
                                 WORKTREES_DIR=tmp_path / machine / "worktrees")

    with on("a", OWNER):
        first = CopyRoomGit(room, session_id=session.pk, owner=OWNER)
        worktree = first.worktree(session.pk)
        (worktree.path / "first.txt").write_text("a's\n")
        git("add", "first.txt", cwd=worktree.path)
        git("commit", "--quiet", "-m", "a's work", cwd=worktree.path)
        first.committed(worktree.branch)
        pushed_by_a = git("rev-parse", "HEAD", cwd=worktree.path).strip()
    with on("b", "worker-2@c:7"):
        second = CopyRoomGit(room, session_id=session.pk, owner="worker-2@c:7")
        moved = second.worktree(session.pk)
        (moved.path / "second.txt").write_text("b's, half done\n")
        git("add", "second.txt", cwd=moved.path)
        git("commit", "--quiet", "-m", "b's work in progress", cwd=moved.path)
        second.committed(moved.branch)
        # a is not dead, only slow: its merge, asked with b's lease, names a's tip, and b moved the branch.
        stale = worker_token_mint(room_id=room.pk, session_id=session.pk, owner="worker-2@c:7")
        answer = _ask(daphne_server, room.slug, "merge", stale, json={"tip": pushed_by_a})
    assert answer.status_code == 409 and "another worker has the session now" in answer.text, answer.text
    assert git("rev-parse", "main", cwd=repo).strip() == main_before


def test_a_worker_elsewhere_takes_over_a_session_a_worker_beside_the_repository_ran(daphne_server, tmp_path):
    room = make_room(make_user("ada"), "Mixed room")
    session = _running(room)
    repo = Path(room.repo_path)
    beside = RoomGit(room).worktree(session.pk)  # the hub's own worker ran it, and left work uncommitted
    (beside.path / "left.txt").write_text("written by the worker beside the repository\n")
    with override_settings(HUB_URL=daphne_server.url, COPIES_DIR=tmp_path / "copies",
                           WORKTREES_DIR=tmp_path / "worktrees"):
        copy = CopyRoomGit(room, session_id=session.pk, owner=OWNER)
        worktree = copy.worktree(session.pk)
        assert (worktree.path / "left.txt").read_text() == "written by the worker beside the repository\n"
        (worktree.path / "more.txt").write_text("and more, elsewhere\n")
        git("add", "more.txt", cwd=worktree.path)
        git("commit", "--quiet", "-m", "more", cwd=worktree.path)
        copy.committed(worktree.branch)  # the branch is checked out nowhere on the hub: it takes the push
    assert not beside.path.exists()
    assert git("show", f"{worktree.branch}:more.txt", cwd=repo) == "and more, elsewhere\n"
