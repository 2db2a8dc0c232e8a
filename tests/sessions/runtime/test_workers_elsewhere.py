"""Issue 32, point 1: workers on machines that do not see the hub's folders. Each worker
has a data folder of its own and reaches the room's repository only through the hub's
git remote (``ATRIUM_HUB_URL``): it makes its session's worktree in a copy of its own,
pushes the session's branch, and the hub merges it where the room's repository is.
Real Daphne, real Celery workers, real git over HTTP; PostgreSQL is all they share."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from observations.blobs import blob_texts
from rooms.repository.git import git
from rooms.repository.worktrees import session_branch, worktree_commit
from sessions.models import ApprovalRule, Observation, Review, Session, SessionEvent, Task
from sessions.retention import old_worktrees_remove
from sessions.services.lifecycle import session_start
from sessions.services.reviews import room_reviewer_set
from sessions.services.tasks import task_create
from sessions.worker.room_git import CopyRoomGit
from tests.conftest import _free_port, start_daphne, subprocess_database_url
from tests.sessions.runtime.test_resume import claims, holder
from tests.sessions.runtime.test_review_workers import FIXED, on_main, start_author
from tests.sessions.runtime.test_workers import agent_in, ended, wait_for

HOST_SEEN_FROM_ELSEWHERE = "10.0.2.2"  # the host's loopback, from a slirp4netns namespace

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="an SQLite hub is one machine: its workers share its folders")]


def _machine(hub_workers, daphne_server, folder: Path, **env: str):
    return hub_workers(**{"ATRIUM_DATA_DIR": str(folder), "ATRIUM_HUB_URL": daphne_server.url,
                          "SECRET_KEY": settings.SECRET_KEY, "ATRIUM_BLOB_STORE": "database", **env})


def _writes_allowed(room, *, check: str) -> None:
    room.check_command = check
    room.save()
    for tool in ("write_file", "shell"):
        ApprovalRule.objects.create(room=room, tool=tool, decision="allow")


def _registered_worktrees(repo: Path) -> list[str]:
    listed = git("worktree", "list", "--porcelain", cwd=repo).splitlines()
    return [line.removeprefix("worktree ") for line in listed if line.startswith("worktree ")]


def _on_a_machine_of_its_own(argv: list[str]) -> list[str]:
    """``argv`` in mount and network namespaces of its own: the hub's repositories and
    worktrees folders are empty there, and the host is reached through slirp4netns at
    ``HOST_SEEN_FROM_ELSEWHERE`` only (its loopback: PostgreSQL, Redis, the hub)."""
    hidden = " ".join(shlex.quote(str(folder)) for folder in (settings.REPOS_DIR, settings.WORKTREES_DIR))
    inside = (f'for folder in {hidden}; do mount -t tmpfs -o size=1m tmpfs "$folder" || exit 1; done; '
              'until ip route show default | grep -q .; do sleep 0.05; done; exec "$@"')
    # slirp4netns joins the network namespace the process has when it starts: its own,
    # once unshare made it, not the host's.
    outside = (f'unshare --mount --net -- sh -c {shlex.quote(inside)} sh "$@" & machine=$!; '
               'while [ "$(readlink /proc/$machine/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.05; done; '
               'slirp4netns --configure --mtu=65520 --disable-dns "$machine" tap0 >/dev/null 2>&1 & '
               'wait "$machine"')
    return ["sh", "-c", outside, "sh", *argv]


def _seen_from_elsewhere(url: str) -> str:
    return url.replace("127.0.0.1", HOST_SEEN_FROM_ELSEWHERE).replace("localhost", HOST_SEEN_FROM_ELSEWHERE)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("slirp4netns"),
                    reason="namespaces of its own for each worker need root and slirp4netns")
def test_two_workers_on_machines_of_their_own_run_one_rooms_sessions_to_merges(
        hub_workers, person, demo_room, tmp_path):
    _writes_allowed(demo_room, check="test -f part_a.txt -o -f part_b.txt")
    Path(settings.WORKTREES_DIR).mkdir(parents=True, exist_ok=True)
    hub = start_daphne(tmp_path / "daphne.log", ALLOWED_HOSTS=f"127.0.0.1,{HOST_SEEN_FROM_ELSEWHERE}")
    machine_a, machine_b = tmp_path / "machine-a", tmp_path / "machine-b"

    def machine(folder: Path):
        return hub_workers(wrap=_on_a_machine_of_its_own, ATRIUM_DATA_DIR=str(folder),
                           ATRIUM_HUB_URL=_seen_from_elsewhere(hub.url), SECRET_KEY=settings.SECRET_KEY,
                           ATRIUM_BLOB_STORE="database", DATABASE_URL=_seen_from_elsewhere(subprocess_database_url()),
                           REDIS_URL=_seen_from_elsewhere(os.environ["REDIS_URL"]))

    try:
        workers = [machine(machine_a), machine(machine_b)]
        first = session_start(task=task_create(room=demo_room, actor=person, title="Part A", objective="Write A"),
                              agent=agent_in(demo_room, "alpha", "elsewhere-a.json"), actor=person)
        # The worker that took it is busy with it (its shell sleeps) when the second session comes.
        wait_for(lambda: Session.objects.get(pk=first.pk).worktree_path, 60, "the first worktree", workers)
        second = session_start(task=task_create(room=demo_room, actor=person, title="Part B", objective="Write B"),
                               agent=agent_in(demo_room, "beta", "elsewhere-b.json"), actor=person)
        for session in (first, second):
            wait_for(lambda s=session: ended(s), 120, f"session {session.pk} to end", workers + [hub])
            assert session.state == "succeeded", session.reason
            assert "merged" in session.reason
    finally:
        hub.hub_process.stop()

    repo = Path(demo_room.repo_path)
    first.refresh_from_db()
    second.refresh_from_db()
    on = {next(m for m in (machine_a, machine_b) if Path(s.worktree_path).is_relative_to(m)) for s in (first, second)}
    assert on == {machine_a, machine_b}  # one session on each machine
    for name in ("part_a.txt", "part_b.txt"):
        assert git("show", f"main:{name}", cwd=repo) == "written on a worker of its own\n"
    # Each branch came to the hub by push, and no worktree of the hub's repository was made.
    assert _registered_worktrees(repo) == [str(repo)]
    for session in (first, second):
        git("merge-base", "--is-ancestor", session_branch(session.pk), "main", cwd=repo)  # raises if not
    assert not (Path(settings.WORKTREES_DIR) / str(first.pk)).exists()


def test_a_worker_that_takes_a_session_over_starts_from_what_the_last_one_pushed(
        daphne_server, person, demo_room, tmp_path):
    task = Task.objects.create(room=demo_room, title="Work", objective="Work", created_by=person)
    session = Session.objects.create(task=task, agent=agent_in(demo_room, "alpha", "elsewhere-a.json"),
                                     state="running", lease_expires_at=timezone.now() + timedelta(minutes=5))

    def on(machine: str):
        Session.objects.filter(pk=session.pk).update(lease_owner=f"worker@{machine}:1")
        folder = tmp_path / machine
        return override_settings(HUB_URL=daphne_server.url, COPIES_DIR=folder / "copies",
                                 WORKTREES_DIR=folder / "worktrees")

    def work(machine: str, name: str) -> str:
        with on(machine):
            copy = CopyRoomGit(demo_room, session_id=session.pk, owner=f"worker@{machine}:1")
            worktree = copy.worktree(session.pk)
            (worktree.path / name).write_text(f"from {machine}\n")
            commit = worktree_commit(worktree=worktree, message=f"{name} on {machine}")
            copy.committed(worktree.branch)
            return commit

    first = work("a", "one.txt")
    second = work("b", "two.txt")  # b's worktree is made from a's pushed branch
    repo, branch = Path(demo_room.repo_path), session_branch(session.pk)
    assert git("rev-parse", branch, cwd=repo).strip() == second
    assert git("rev-parse", f"{second}^", cwd=repo).strip() == first
    # Back on a: its worktree, behind what b pushed, is made again from the hub's branch.
    (tmp_path / "a" / "worktrees" / str(session.pk) / "never-pushed.txt").write_text("lost with a's lease\n")
    third = work("a", "three.txt")
    assert git("rev-parse", f"{third}^", cwd=repo).strip() == second
    assert git("ls-tree", "--name-only", branch, cwd=repo).split().count("never-pushed.txt") == 0
    assert git("show", f"{branch}:two.txt", cwd=repo) == "from b\n"

    # Still a's: what it holds uncommitted stays, and a commit its push never delivered
    # (the hub was down) is pushed when its worktree is asked for again.
    a_worktree = tmp_path / "a" / "worktrees" / str(session.pk)
    (a_worktree / "in-progress.txt").write_text("not committed yet\n")
    (a_worktree / "unpushed.txt").write_text("committed, never pushed\n")
    git("add", "unpushed.txt", cwd=a_worktree)
    git("commit", "--quiet", "-m", "unpushed", cwd=a_worktree)
    unpushed = git("rev-parse", "HEAD", cwd=a_worktree).strip()
    with on("a"):
        CopyRoomGit(demo_room, session_id=session.pk, owner="worker@a:1").worktree(session.pk)
    assert (a_worktree / "in-progress.txt").read_text() == "not committed yet\n"
    assert git("rev-parse", branch, cwd=repo).strip() == unpushed
    # The worker's token was never written down on either machine.
    written = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert not [content for content in written if b"atr-wkr-" in content or b"d29ya2VyOmF0ci13a3It" in content]


def test_a_session_waits_for_a_hub_that_does_not_answer_and_goes_on_once_it_does(
        hub_workers, person, demo_room, tmp_path):
    _writes_allowed(demo_room, check="")
    port = _free_port()
    worker = hub_workers(ATRIUM_DATA_DIR=str(tmp_path / "machine-a"), ATRIUM_HUB_URL=f"http://127.0.0.1:{port}",
                         SECRET_KEY=settings.SECRET_KEY, ATRIUM_BLOB_STORE="database")
    session = session_start(task=task_create(room=demo_room, actor=person, title="Part A", objective="Write part A"),
                            agent=agent_in(demo_room, "alpha", "elsewhere-a.json"), actor=person)
    wait_for(lambda: SessionEvent.objects.filter(session=session, kind="session.given_back").exists(), 60,
             "the session to be given back", [worker])
    assert not ended(session)
    hub = start_daphne(tmp_path / "daphne.log", port=port)
    try:
        wait_for(lambda: ended(session), 120, "the session to end", [worker, hub])
    finally:
        hub.hub_process.stop()
    assert session.state == "succeeded", session.reason
    assert git("show", "main:part_a.txt", cwd=Path(demo_room.repo_path)) == "written on a worker of its own\n"
    said = SessionEvent.objects.filter(session=session, kind="session.given_back").first().payload
    assert "the hub's git remote did not answer" in str(said)


def test_a_worker_killed_mid_session_leaves_it_to_another_that_resumes_from_the_pushed_branch(
        hub_workers, daphne_server, person, demo_room, tmp_path):
    _writes_allowed(demo_room, check="test -f part.txt")
    machines = [tmp_path / "machine-a", tmp_path / "machine-b"]
    workers = [_machine(hub_workers, daphne_server, folder, ATRIUM_JOB_SILENCE_SECONDS="3") for folder in machines]
    beat = hub_workers.beat()
    session = session_start(task=task_create(room=demo_room, actor=person, title="Part", objective="Write it"),
                            agent=agent_in(demo_room, "alpha", "elsewhere-killed.json"), actor=person)
    repo, branch = Path(demo_room.repo_path), session_branch(session.pk)
    # Its second call is recorded (so its file was pushed before): the third, a six-second sleep, runs.
    wait_for(lambda: Observation.objects.filter(session=session, arguments__command="echo run >> runs.txt").exists(),
             60, "the second call recorded", workers)
    assert git("show", f"{branch}:runs.txt", cwd=repo) == "run\n"
    victim = holder(workers, session)
    first_claims = len(claims(session))
    os.killpg(victim.hub_process.process.pid, signal.SIGKILL)
    wait_for(lambda: len(claims(session)) > first_claims, 60, "the other worker to take it over", workers + [beat])
    wait_for(lambda: ended(session), 120, "the session to end", workers + [beat])
    assert session.state == "succeeded", session.reason
    session.refresh_from_db()
    survivor = machines[1 - workers.index(victim)]
    assert Path(session.worktree_path).is_relative_to(survivor / "worktrees")
    assert git("show", "main:part.txt", cwd=repo) == "written before the worker died\n"
    assert git("show", "main:runs.txt", cwd=repo) == "run\n"  # no call run again
    steps = [e.payload["step"] for e in SessionEvent.objects.filter(session=session, kind="model.reply")]
    assert steps == sorted(set(steps))  # no step lost or run twice


def test_a_reviewer_on_a_worker_of_its_own_reads_each_round_as_its_author_pushed_it(
        hub_workers, daphne_server, person, demo_room, tmp_path):
    workers = [_machine(hub_workers, daphne_server, tmp_path / name) for name in ("machine-a", "machine-b")]
    workers.append(hub_workers.beat())
    critic = agent_in(demo_room, "critic", "review-critic.json")
    room_reviewer_set(room=demo_room, actor=person, agent_id=critic.pk)
    session = start_author(demo_room, person)
    wait_for(lambda: ended(session), 180, "the author's session to end", workers)
    assert session.state == "succeeded", session.reason
    assert on_main(demo_room) == FIXED  # the reviewed, fixed version merged
    rounds = list(Review.objects.filter(session=session).order_by("round"))
    assert [r.state for r in rounds] == ["changes_requested", "approved"]
    reads = Observation.objects.filter(session=rounds[0].reviewer_session, tool="read_file").order_by("seq")
    seen = [blob_texts({read.blob_id})[read.blob_id] for read in reads]
    assert len(seen) == 2 and "if xs else 0.0" not in seen[0] and "if xs else 0.0" in seen[1], seen


def test_a_worker_removes_the_old_worktrees_of_its_own_machine(daphne_server, person, demo_room, tmp_path):
    task = Task.objects.create(room=demo_room, title="Work", objective="Work", created_by=person)
    agent = agent_in(demo_room, "alpha", "elsewhere-a.json")
    old, live = (Session.objects.create(task=task, agent=agent, attempt=attempt, state="running",
                                        lease_owner="worker@a:1", lease_expires_at=timezone.now() + timedelta(minutes=5))
                 for attempt in (1, 2))
    folder = tmp_path / "machine-a"
    with override_settings(HUB_URL=daphne_server.url, COPIES_DIR=folder / "copies", WORKTREES_DIR=folder / "worktrees"):
        made = {s.pk: CopyRoomGit(demo_room, session_id=s.pk, owner="worker@a:1").worktree(s.pk) for s in (old, live)}
        for session in (old, live):
            Session.objects.filter(pk=session.pk).update(worktree_path=str(made[session.pk].path),
                                                         branch=made[session.pk].branch)
        Session.objects.filter(pk=old.pk).update(state="succeeded", finished_at=timezone.now() - timedelta(days=30))
        (folder / "worktrees" / "999999").mkdir()  # of a session deleted since
        copy = made[old.pk].repo
        for session in (old, live):  # as a reviewer's copy keeps the branches it reviews
            git("update-ref", f"refs/atrium/reviewed/{session_branch(session.pk)}", "HEAD", cwd=made[live.pk].path)
        assert old_worktrees_remove() == 2
        assert git("for-each-ref", "--format=%(refname)", "refs/atrium/", cwd=copy).split() == [
            f"refs/atrium/hub/{demo_room.default_branch}", f"refs/atrium/reviewed/{session_branch(live.pk)}"]
        assert not made[old.pk].path.exists() and made[live.pk].path.is_dir()
        assert not (folder / "worktrees" / "999999").exists()
        assert _registered_worktrees(copy) == [str(copy), str(made[live.pk].path)]
        branches = git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=copy).split()
        assert branches == [session_branch(live.pk), demo_room.default_branch]
    assert Session.objects.get(pk=old.pk).worktree_path == ""
    assert Session.objects.get(pk=live.pk).worktree_path == str(made[live.pk].path)


def test_a_worker_the_hub_cannot_read_fails_its_session_saying_why(hub_workers, daphne_server, person, demo_room,
                                                                   tmp_path):
    _writes_allowed(demo_room, check="")
    worker = _machine(hub_workers, daphne_server, tmp_path / "machine-a", SECRET_KEY="not the hub's " + "k" * 40)
    session = session_start(task=task_create(room=demo_room, actor=person, title="Part A", objective="Write A"),
                            agent=agent_in(demo_room, "alpha", "elsewhere-a.json"), actor=person)
    wait_for(lambda: ended(session), 60, "the session to end", [worker])
    assert session.state == "failed"
    assert "the worker's SECRET_KEY is not the hub's, or their clocks disagree" in session.reason


def test_a_reviewers_checkout_moves_only_when_the_authors_branch_does(daphne_server, person, demo_room, tmp_path):
    task = Task.objects.create(room=demo_room, title="Work", objective="Work", created_by=person)
    agent = agent_in(demo_room, "alpha", "elsewhere-a.json")
    author, reviewer = (Session.objects.create(task=task, agent=agent, attempt=attempt, state="running",
                                               lease_owner=f"worker@{name}:1",
                                               lease_expires_at=timezone.now() + timedelta(minutes=5))
                        for attempt, name in ((1, "a"), (2, "b")))

    def machine(name: str):
        return override_settings(HUB_URL=daphne_server.url, COPIES_DIR=tmp_path / name / "copies",
                                 WORKTREES_DIR=tmp_path / name / "worktrees")

    def author_writes(text: str) -> None:
        with machine("a"):
            copy = CopyRoomGit(demo_room, session_id=author.pk, owner="worker@a:1")
            worktree = copy.worktree(author.pk)
            (worktree.path / "work.txt").write_text(text)
            worktree_commit(worktree=worktree, message=text)
            copy.committed(worktree.branch)
            Session.objects.filter(pk=author.pk).update(branch=worktree.branch, worktree_path=str(worktree.path))
        author.refresh_from_db()

    def reviewer_reads():
        with machine("b"):
            return CopyRoomGit(demo_room, session_id=reviewer.pk, owner="worker@b:1").reviewed_worktree(
                author, reviewer.pk)

    author_writes("first version\n")
    reading = reviewer_reads()
    assert (reading.path / "work.txt").read_text() == "first version\n"
    (reading.path / "scratch.txt").write_text("the reviewer's own\n")
    assert reviewer_reads().path == reading.path and (reading.path / "scratch.txt").exists()  # not moved
    author_writes("second version\n")
    assert reviewer_reads().path == reading.path
    assert (reading.path / "work.txt").read_text() == "second version\n"
    assert not (reading.path / "scratch.txt").exists()  # moved: only the author's work is there
