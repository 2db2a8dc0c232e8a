"""Issue 24, from the attacker's side: a command could write until the machine's disk was
full (every room's commands, the hub's database and logs with it), and every room's
commands ran as one user, so per-user limits and files were shared by all rooms. Now a
worktree has a disk limit (the job wrapper stops a command that passes it, the session
then ends saying so) and, on a root hub, each room runs as a user of its own. Two rooms
at once, through the ToolBox as sessions use it, and a session on a real worker."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

from agents.confinement import room_uid
from agents.tools import ToolBox, WorktreeFull
from agents.tools.disk import disk_usage
from agents.tools.sandbox import Limits, interpreter_policy
from rooms.repository.git import git
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule, Session, SessionEvent
from tests.agents.tools.conftest import call
from tests.rooms.factories import make_user
from tests.security.test_hostile_repository import _replay_session, attacker_repo
from tests.sessions.runtime.test_workers import ended, wait_for

MB = 1 << 20
LIMIT = 48 * MB
# Writes 1 MB files at most ~20 MB/s (still at it when the other room writes), up to
# 2 GB: far past the limit unless stopped.
FILL = ("python3 -c \"import os, time\nos.makedirs('fill', exist_ok=True)\nfor i in range(2048):\n"
        "    open(f'fill/{i}', 'wb').write(os.urandom(1 << 20)); time.sleep(0.05)\nprint('filled')\"")


def box(tmp_path: Path, name: str, *, limits: Limits | None = None, uid: int | None = None) -> ToolBox:
    worktree = tmp_path / name / "worktree"
    worktree.mkdir(parents=True)
    return ToolBox(worktree=worktree, state_dir=tmp_path / name / "state", yield_seconds=1.0,
                   sandbox=interpreter_policy(limits=limits or Limits()), uid=uid)


def test_a_disk_filler_is_stopped_at_its_worktrees_limit_while_the_other_room_writes(tmp_path):
    attacker = box(tmp_path, "attacker", limits=dataclasses.replace(Limits(), worktree_bytes=LIMIT))
    victim = box(tmp_path, "victim")
    filling = call("shell", command=FILL)
    started = attacker.execute(filling)
    assert started.job_handle, started.text  # still writing, in the background
    wrote = victim.execute(call("shell", command="head -c 64M /dev/zero > big && du -m big && echo victim-ok"))
    assert "victim-ok" in wrote.text and "exit 0" in wrote.text, wrote.text
    with pytest.raises(WorktreeFull) as full:
        for _ in range(60):  # each await waits at most the box's bound (1 s)
            attacker.execute(call("await", handles=[started.job_handle]))
    assert "past the room's limit of 48 MB" in str(full.value)
    report = attacker.jobs.output(started.job_handle, 4000)
    assert "[stopped: the session's files took" in report and "filled" not in report, report
    status = attacker.jobs.status(started.job_handle)
    assert status.exit_code == 125 and "past the room's limit of 48 MB" in status.describe()
    # Stopped within about a second of writing: nowhere near the 2 GB it meant to write.
    assert disk_usage([str(attacker.worktree)]) < LIMIT + 256 * MB
    assert disk_usage([str(victim.worktree)]) >= 64 * MB


def test_the_limit_counts_disk_not_names_and_sees_through_no_link(tmp_path):
    attacker = box(tmp_path, "attacker", limits=dataclasses.replace(Limits(), worktree_bytes=LIMIT))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"\0" * (64 * MB))
    # A sparse file of 900 MB takes no disk; a link to a big folder elsewhere is not the worktree's.
    done = attacker.execute(call("shell", command=f"truncate -s 900M sparse && ln -s {outside} elsewhere && echo ok"))
    assert "exit 0" in done.text and "ok" in done.text, done.text
    assert disk_usage([str(attacker.worktree)]) < MB


@pytest.mark.skipif(os.geteuid() != 0, reason="rooms have users of their own when the hub is root")
def test_two_rooms_run_as_two_users_that_have_names(tmp_path):
    first, second = box(tmp_path, "first", uid=1_600_000_001), box(tmp_path, "second", uid=1_600_000_002)
    command = "id -u && whoami && touch made && git init -q g && git -C g -c user.email=agent@sandbox commit -q --allow-empty -m x && echo git-ok"
    one, two = first.execute(call("shell", command=command)), second.execute(call("shell", command=command))
    assert "1600000001\nagent\n" in one.text and "git-ok" in one.text, one.text
    assert "1600000002\nagent\n" in two.text and "git-ok" in two.text, two.text
    assert (first.worktree / "made").stat().st_uid == 1_600_000_001
    assert (second.worktree / "made").stat().st_uid == 1_600_000_002


@pytest.mark.django_db(transaction=True)
def test_a_session_that_fills_its_worktree_ends_saying_so_and_merges_nothing(hub_workers, tmp_path):
    worker = hub_workers(ATRIUM_WORKTREE_MAX_MB="48")
    attacker = make_user("attacker")
    room = room_create(owner=attacker, name="Filler", source=TemplateRepository(attacker_repo(tmp_path)))
    ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
    session = _replay_session(room, attacker, [
        {"text": "Who am I?", "tool_calls": [{"name": "shell", "arguments": {"command": "id -u"}}]},
        {"text": "Filling.", "tool_calls": [{"name": "shell", "arguments": {"command": FILL, "timeout": 120}}]},
        {"text": "Done."},
    ])
    wait_for(lambda: ended(session), 180, "the session to end", [worker])
    session.refresh_from_db()
    assert session.state == Session.State.FAILED, session.reason
    assert session.reason.startswith("stopped by the hub: the session's files (worktree, /tmp, command output) take") and "limit of 48 MB" in session.reason
    assert "fill/0" not in git("ls-tree", "-r", "--name-only", "main", cwd=Path(room.repo_path))
    # Its files removed (just after the session ended).
    wait_for(lambda: not Session.objects.get(pk=session.pk).worktree_path, 30, "the worktree to be removed", [worker])
    assert not any(Path(settings.WORKTREES_DIR).rglob("fill"))
    if os.geteuid() == 0:
        who = SessionEvent.objects.filter(session=session, kind="tool.result").order_by("seq").first()
        assert who.payload["preview"].splitlines()[-1] == str(room_uid(room.pk)), who.payload


def test_the_hub_never_writes_a_set_uid_file_for_the_room(tmp_path):
    """The agent marks its file set-uid; an edit by the hub (root, outside the sandbox)
    keeps its permission bits only, so no moment exists where root owns a set-uid copy."""
    room = box(tmp_path, "room")
    made = room.execute(call("shell", command="printf 'echo hi\\n' > tool.sh && chmod 4755 tool.sh && stat -c %a tool.sh"))
    assert "4755" in made.text, made.text
    edited = room.execute(call("edit_file", path="tool.sh", old="hi", new="hello"))
    assert not edited.is_error, edited.text
    mode = (room.worktree / "tool.sh").stat().st_mode
    assert mode & 0o7777 == 0o755 and (room.worktree / "tool.sh").read_text() == "echo hello\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a folder of another user")
def test_what_the_session_puts_in_tmp_counts_and_a_folder_it_may_not_read_counts_as_full(tmp_path):
    room = box(tmp_path, "room", limits=dataclasses.replace(Limits(), worktree_bytes=LIMIT))
    with pytest.raises(WorktreeFull):
        room.execute(call("shell", command="head -c 60M /dev/zero > /tmp/big"))
    hidden = Path(tempfile.mkdtemp(prefix="atrium-hidden-"))  # reachable by the user below, unlike tmp_path
    (hidden / "d").mkdir()
    (hidden / "d" / "x").write_bytes(b"x" * 4096)
    for path in (hidden, hidden / "d", hidden / "d" / "x"):
        os.chown(path, 65534, 65534)
    hidden.chmod(0o755)
    (hidden / "d").chmod(0)  # as a command on a hub that is not root makes it: du, as the same user, cannot look in
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run([*as_nobody, sys.executable, "-c", "pass"], capture_output=True).returncode:
        shutil.rmtree(hidden, ignore_errors=True)
        pytest.skip("this interpreter cannot run as another user (its libraries are under a private folder)")
    counted = subprocess.run([*as_nobody, sys.executable, "-c",
                              f"from agents.tools._jobwrapper import disk_usage, UNCOUNTABLE; "
                              f"print(disk_usage([{str(hidden)!r}]) == UNCOUNTABLE)"],
                             capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    shutil.rmtree(hidden, ignore_errors=True)
    assert counted.stdout.strip() == "True", counted.stderr
