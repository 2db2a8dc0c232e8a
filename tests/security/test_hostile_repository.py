"""Issue 24, from the attacker's side: the hub works on a room's files outside the
sandbox, and an ordinary user controls every byte of them (an uploaded bundle, and the
agent's model, which writes whatever it likes into the worktree). Each test mounts one
attack through the hub's own entry points and checks that the attacker gets nothing:
no program of theirs run by the hub, no file read or written through a link, no race
won, the room or the session ending with a clear refusal and nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from agents.models import AgentProfile
from agents.tools.beneath import PathRefused
from agents.tools.outcome import ToolError
from rooms.errors import RoomError
from rooms.models import RoomAgent
from rooms.repository.git import git
from rooms.repository.intent import intent_read, intent_relpath
from rooms.repository.prepare import BundleRepository, TemplateRepository
from rooms.repository.worktrees import (
    branch_diff,
    worktree_bring_in,
    worktree_commit,
    worktree_create,
    worktree_merge,
)
from rooms.services import room_create
from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.rooms.factories import make_user
from tests.sessions.runtime.test_workers import ended, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def plain_git(*args: str, cwd: Path) -> str:
    """git as the attacker runs it on their own machine (not the hub's helper)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@x", "GIT_COMMITTER_NAME": "m",
           "GIT_COMMITTER_EMAIL": "m@x"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def bundle_of(source: Path, tmp_path: Path) -> BundleRepository:
    out = tmp_path / f"{source.name}.bundle"
    plain_git("bundle", "create", str(out), "--all", cwd=source)
    return BundleRepository(out)


def attacker_repo(tmp_path: Path, name: str = "evil") -> Path:
    source = tmp_path / name
    source.mkdir()
    plain_git("init", "-q", "-b", "main", cwd=source)
    (source / "README.md").write_text("hello\n")
    return source


def commit_all(source: Path) -> None:
    plain_git("add", "-A", cwd=source)
    plain_git("commit", "-q", "-m", "c", cwd=source)


def fsmonitor_trap(tmp_path: Path) -> tuple[Path, Path]:
    """A program that records who ran it, and where it writes (outside every worktree)."""
    fired = tmp_path / "fired.txt"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"uid=$(id -u) $*\" >> {fired}\n")
    script.chmod(0o755)
    os.chmod(tmp_path, 0o777)
    return script, fired


def nested_repository(worktree: Path, script: Path) -> None:
    """What the agent's shell can do in its worktree: a repository of its own inside,
    whose config names the attacker's program as its fsmonitor."""
    sub = worktree / "sub"
    sub.mkdir()
    plain_git("init", "-q", cwd=sub)
    (sub / "f.txt").write_text("one\n")
    plain_git("add", "f.txt", cwd=sub)
    plain_git("commit", "-q", "-m", "s", cwd=sub)
    plain_git("config", "core.fsmonitor", str(script), cwd=sub)
    (sub / "f.txt").write_text("two\n")  # dirty: git would ask the fsmonitor about it
    (worktree / "work.py").write_text("print('work')\n")


# --- 1. code execution through the hub's own git --------------------------------------------


def test_a_nested_repository_in_a_worktree_runs_nothing_in_any_git_the_hub_runs(tmp_path):
    script, fired = fsmonitor_trap(tmp_path)
    owner = make_user("attacker")
    room = room_create(owner=owner, name="Nested", source=TemplateRepository(attacker_repo(tmp_path)))
    repo = Path(room.repo_path)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    nested_repository(worktree.path, script)

    commit = worktree_commit(worktree=worktree, message="work")  # git add, diff, commit
    worktree_commit(worktree=worktree, message="again")
    (repo / "main-change.txt").write_text("main moved\n")
    git("add", "main-change.txt", cwd=repo)
    git("commit", "-q", "-m", "main", cwd=repo)
    worktree_bring_in(worktree=worktree)  # the conflict bring-in
    worktree_commit(worktree=worktree, message="merged main")
    branch_diff(repo=repo, branch=worktree.branch)  # a review's diff
    assert worktree_merge(repo=repo, branch=worktree.branch).merged

    assert not fired.exists(), fired.read_text()
    committed = git("ls-tree", "-r", "--name-only", worktree.branch, cwd=repo).split()
    assert "work.py" in committed and not any(p == "sub" or p.startswith("sub/") for p in committed)
    assert "Not committed: sub (nested repositories" in git("log", "-1", "--format=%B", commit, cwd=repo)


def test_a_session_whose_agent_makes_a_nested_repository_ends_without_running_it(hub_workers, tmp_path):
    worker = hub_workers()
    script, fired = fsmonitor_trap(tmp_path)
    attacker = make_user("attacker")
    room = room_create(owner=attacker, name="Nested session", source=TemplateRepository(attacker_repo(tmp_path)))
    ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
    command = (f"git init -q sub && echo one > sub/f && git -C sub add f && "
               f"git -C sub -c user.name=m -c user.email=m@x commit -qm s && "
               f"git -C sub config core.fsmonitor {script} && echo two > sub/f && echo x > work.txt")
    session = _replay_session(room, attacker, [
        {"text": "Planting.", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
        {"text": "Done."},
    ])
    wait_for(lambda: ended(session), 180, "the session to end", [worker])
    session.refresh_from_db()
    assert session.state == Session.State.SUCCEEDED, session.reason
    assert not fired.exists(), fired.read_text()
    files = git("ls-tree", "-r", "--name-only", "main", cwd=Path(room.repo_path)).split()
    assert "work.txt" in files and "sub" not in files


def test_a_bundle_with_a_submodule_is_refused_and_leaves_no_room(tmp_path):
    source = attacker_repo(tmp_path)
    inner = attacker_repo(tmp_path, "inner")
    commit_all(inner)
    head = plain_git("rev-parse", "HEAD", cwd=inner).strip()
    plain_git("add", "README.md", cwd=source)
    plain_git("update-index", "--add", "--cacheinfo", f"160000,{head},sub", cwd=source)
    plain_git("commit", "-q", "-m", "with a submodule", cwd=source)
    before = set(Path(settings.REPOS_DIR).iterdir()) if Path(settings.REPOS_DIR).exists() else set()
    with pytest.raises(RoomError, match="sub on main is a submodule"):
        room_create(owner=make_user("attacker"), name="Gitlink", source=bundle_of(source, tmp_path))
    assert set(Path(settings.REPOS_DIR).iterdir()) == before


# --- 2. hub-owned paths never follow links ----------------------------------------------------


def test_a_bundle_that_links_atrium_tasks_elsewhere_is_refused(tmp_path):
    source = attacker_repo(tmp_path)
    (source / ".atrium").mkdir()
    os.symlink("/proc/self", source / ".atrium" / "tasks")
    commit_all(source)
    with pytest.raises(RoomError, match=r"ships \.atrium/"):
        room_create(owner=make_user("attacker"), name="Linked", source=bundle_of(source, tmp_path))


def test_a_bundle_whose_files_pass_the_checkout_cap_is_refused_before_checkout(tmp_path, settings):
    settings.ATRIUM_CHECKOUT_MAX_BYTES = 1024 * 1024
    source = attacker_repo(tmp_path)
    (source / "big.bin").write_bytes(b"\0" * (2 * 1024 * 1024))  # compresses to almost nothing
    commit_all(source)
    with pytest.raises(RoomError, match="more than the 1 MB"):
        room_create(owner=make_user("attacker"), name="Big", source=bundle_of(source, tmp_path))


def test_the_intent_is_never_read_through_a_link_in_the_room_checkout(tmp_path):
    secret = tmp_path / "secret"
    (secret / "1").mkdir(parents=True)
    (secret / "1" / "intent.md").write_text("root-only secret\n")
    room = room_create(owner=make_user("owner"), name="Read", source=TemplateRepository(attacker_repo(tmp_path)))
    (Path(room.repo_path) / ".atrium").mkdir(exist_ok=True)
    os.symlink(secret, Path(room.repo_path) / ".atrium" / "tasks")
    with pytest.raises(PathRefused, match="symbolic link"):
        intent_read(repo_path=room.repo_path, task_id=1)


def test_a_task_cannot_write_its_intent_through_a_dangling_link(tmp_path):
    owner = make_user("owner")
    room = room_create(owner=owner, name="Write", source=TemplateRepository(attacker_repo(tmp_path)))
    target = tmp_path / "site-packages" / "evil.pth"
    target.parent.mkdir()
    task_folder = Path(room.repo_path) / ".atrium" / "tasks"
    # Ids come from a sequence the whole run shares: the next task's follows this one's.
    next_id = task_create(room=room, actor=owner, title="First", objective="First").pk + 1
    links = []
    for task_id in range(next_id, next_id + 20):
        (task_folder / str(task_id)).mkdir()
        os.symlink(target, task_folder / str(task_id) / "intent.md")
        links.append(task_folder / str(task_id) / "intent.md")
    with pytest.raises(RoomError, match="intent file cannot be written.*symbolic link"):
        task_create(room=room, actor=owner, title="T", objective="import os; os.system('id')")
    assert not target.exists()
    assert all(link.is_symlink() for link in links)  # refused before anything was written or undone
    assert list(room.tasks.values_list("title", flat=True)) == ["First"]


# --- 3. the file tools, raced --------------------------------------------------------------

SWAPPER = textwrap.dedent("""
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = (os.fsencode(p) for p in sys.argv[1:3])
    end = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < end:
        libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE: a folder and a link trade places
""")


@pytest.fixture
def raced_worktree(tmp_path):
    """A worktree whose ``d`` is swapped, as fast as a job can, with a link to a folder
    outside that holds a secret (a real process, as a background job would run it)."""
    worktree = tmp_path / "worktree"
    (worktree / "d").mkdir(parents=True)
    (worktree / "d" / "f.txt").write_text("harmless\n")
    outside = tmp_path / "root-only"
    outside.mkdir()
    (outside / "f.txt").write_text("ROOT-SECRET\n")
    os.symlink(outside, worktree / "link")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(worktree / "d"), str(worktree / "link"), "30"])
    yield worktree, outside
    swapper.kill()
    swapper.wait()


def test_a_folder_swapped_for_a_link_never_lets_the_file_tools_out(raced_worktree, tmp_path):
    from agents.tools import edits, files, search
    from agents.tools.snapshots import SnapshotStore

    worktree, outside = raced_worktree
    store = SnapshotStore(tmp_path / "snapshots")
    refused = 0
    attempts = (
        lambda n: files.read_file(worktree, path="d/f.txt", start=1, end=None).text,
        lambda n: files.list_files(worktree, path="d", pattern=None).text,
        lambda n: search.search(worktree, pattern="SECRET|harmless", path="d", glob=None).text,
        lambda n: edits.write_file(worktree, store, call_id=f"w{n}", path=f"d/planted-{n}.txt", content="x").text,
    )
    for n in range(400):
        for attempt in attempts:
            try:
                text = attempt(n)
            except (ToolError, PathRefused, OSError):
                refused += 1
                continue
            assert "ROOT-SECRET" not in text
    assert not [p.name for p in outside.iterdir() if p.name.startswith("planted")]
    assert refused > 0  # the race was real: some calls met a swapped folder and said so


def test_the_file_tools_make_no_nested_repository(tmp_path):
    from agents.tools import edits
    from agents.tools.snapshots import SnapshotStore

    worktree = tmp_path / "w"
    worktree.mkdir()
    store = SnapshotStore(tmp_path / "s")
    for path in ("sub/.git/config", "sub/.GIT/config", "a/b/.git"):
        with pytest.raises(PathRefused, match="nested repository"):
            edits.write_file(worktree, store, call_id=path, path=path, content="[core]\n\tfsmonitor = /x\n")
    assert not (worktree / "sub").exists() and not (worktree / "a").exists()


def _replay_session(room, owner, turns) -> Session:
    recording = f"hostile-{uuid.uuid4().hex[:8]}.json"
    (Path(settings.REPLAYS_DIR) / recording).write_text(json.dumps({"turns": turns}))
    agent = AgentProfile.objects.create(name=f"attacker-{recording[:14]}", model=f"replay:{recording}",
                                        context_window=32_000, output_budget=2_000, created_by=owner)
    RoomAgent.objects.create(room=room, agent=agent)
    task = task_create(room=room, actor=owner, title="Plant", objective="Plant things")
    return session_start(task=task, agent=agent, actor=owner)


def test_nothing_is_left_in_the_intent_path_of_a_refused_session(hub_workers, tmp_path):
    """A link put where the intent goes after the task was made: the session ends with
    the refusal, and the link's target is never read into the model's request."""
    worker = hub_workers()
    secret = tmp_path / "secret.txt"
    secret.write_text("ROOT-SECRET\n")
    owner = make_user("owner")
    room = room_create(owner=owner, name="Swap", source=TemplateRepository(attacker_repo(tmp_path)))
    recording = f"hostile-{uuid.uuid4().hex[:8]}.json"
    (Path(settings.REPLAYS_DIR) / recording).write_text(json.dumps({"turns": [{"text": "Done."}]}))
    agent = AgentProfile.objects.create(name="reader", model=f"replay:{recording}", context_window=32_000,
                                        output_budget=2_000, created_by=owner)
    RoomAgent.objects.create(room=room, agent=agent)
    task = task_create(room=room, actor=owner, title="Read", objective="Read")
    intent = Path(room.repo_path) / intent_relpath(task.pk)
    intent.unlink()
    os.symlink(secret, intent)
    session = session_start(task=task, agent=agent, actor=owner)
    wait_for(lambda: ended(session), 120, "the session to end", [worker])
    session.refresh_from_db()
    assert session.state == Session.State.FAILED
    assert "refused by the hub" in session.reason and "symbolic link" in session.reason
    payloads = json.dumps(list(SessionEvent.objects.filter(session=session).values_list("payload", flat=True)))
    assert "ROOT-SECRET" not in payloads


def test_a_fifo_swapped_for_a_folder_never_holds_the_hub(tmp_path):
    """A background job swaps a folder and a FIFO as fast as it can: the hub's walks
    (listing, search, the hand-over of files to the sandbox user) skip what changed
    instead of blocking on a FIFO's open (os.fwalk opened a listed folder by name)."""
    import threading

    from agents.tools import files, search
    from agents.tools.handover import hand_over

    worktree = tmp_path / "w"
    (worktree / "d" / "inner").mkdir(parents=True)
    (worktree / "d" / "inner" / "a.py").write_text("x = 1\n")
    os.mkfifo(worktree / "f")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(worktree / "d"), str(worktree / "f"), "30"])
    done: list[str] = []

    def run() -> None:
        for _ in range(300):
            files.list_files(worktree, path=".", pattern=None)
            search.search(worktree, pattern="x", path=".", glob=None)
            hand_over(worktree, os.getuid(), os.getgid())
        done.append("all")

    try:
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(60)
        assert done == ["all"], "a walk blocked on the FIFO"
    finally:
        swapper.kill()
        swapper.wait()
