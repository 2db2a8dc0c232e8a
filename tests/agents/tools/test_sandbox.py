"""The sandbox every command runs in, through the ToolBox the way sessions use it: real
bubblewrap, real git, real sockets."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from pathlib import Path

import pytest

from agents.tools import ToolBox
from agents.tools.handover import hand_over, prepare
from agents.tools.sandbox import CONFINER, Limits, Place, SandboxPolicy, confine, interpreter_policy
from rooms.repository.worktrees import worktree_commit, worktree_create
from tests.rooms.factories import make_git_repo

from .conftest import call

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db


def output(box: ToolBox, command: str) -> str:
    outcome = box.execute(call("shell", command=command))
    assert not outcome.is_error, outcome.text
    return outcome.text.split("\n", 1)[1]


def test_commands_run_as_an_unprivileged_user_with_only_their_worktree_writable(box, worktree, tmp_path):
    (tmp_path / "beside.txt").write_text("not yours")
    text = output(box, f"id -u; touch made; touch /usr/x 2>&1; cat {tmp_path / 'beside.txt'} 2>&1; "
                       f"echo > {tmp_path / 'new.txt'} 2>&1; echo hi > /tmp/t && cat /tmp/t")
    lines = text.splitlines()
    assert lines[0] == "65534"
    assert "Read-only file system" in lines[1] and "No such file or directory" in lines[2]
    assert lines[-1] == "hi"
    assert (worktree / "made").exists() and (worktree / "made").stat().st_uid != 0
    assert not (tmp_path / "new.txt").exists()


def test_no_other_process_is_visible(box):
    text = output(box, "ls /proc | grep -c '^[0-9]'; cat /proc/1/environ >/dev/null 2>&1 && echo READ")
    assert int(text.splitlines()[0]) <= 6 and "READ" not in text
    assert str(os.getpid()) not in output(box, "ls /proc")


def test_the_private_temp_lasts_the_session_and_belongs_to_it(box, state_dir):
    output(box, "echo kept > /tmp/note")
    assert output(box, "cat /tmp/note").strip() == "kept"
    assert (state_dir / "tmp" / "note").read_text() == "kept\n"


def test_files_the_hub_wrote_stay_editable_by_the_sandbox_user(box, worktree):
    assert not box.execute(call("write_file", path="src/new.py", content="x = 1\n")).is_error
    output(box, "echo 'y = 2' >> src/new.py")
    assert (worktree / "src" / "new.py").read_text() == "x = 1\ny = 2\n"


def test_the_git_pointer_is_read_only_and_git_works_in_a_real_worktree(tmp_path):
    repo = make_git_repo(tmp_path / "room", files={"a.py": "print(1)\n"})
    wt = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=7)
    box = ToolBox(worktree=wt.path, state_dir=tmp_path / "state" / "7", yield_seconds=10,
                  git_dir=repo / ".git")
    text = output(box, "echo 'print(2)' > a.py; git status --short; git diff --stat; "
                       "echo 'gitdir: /etc' > .git 2>&1; git add a.py 2>&1 | head -1")
    assert " M a.py" in text and "1 file changed" in text
    assert "Read-only file system" in text or "Device or resource busy" in text
    assert (wt.path / ".git").read_text().startswith("gitdir: ") and "/etc" not in (wt.path / ".git").read_text()
    # The hub commits outside the sandbox, naming the repository itself.
    assert worktree_commit(worktree=wt, message="change") is not None


def test_no_command_reaches_the_machines_loopback_network_on_or_off(make_box):
    """With the network on, a command has a network of its own (user-mode NAT): the
    machine's loopback, where the hub's services listen, is not part of it
    (tests/security/test_sandbox_network.py reaches a server outside)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('REA' + 'CHED')\""
        assert "REACHED" not in output(make_box(), probe + " 2>&1")
        assert "REACHED" not in output(make_box(network=True), probe + " 2>&1")


def test_limits_bound_processes_cpu_memory_and_file_size(make_box):
    policy = interpreter_policy(limits=Limits(cpu_seconds=5, memory_bytes=512 << 20, processes=4000,
                                              file_bytes=1 << 20, open_files=256))
    box = make_box(sandbox=policy)
    text = output(box, "ulimit -t; ulimit -v; ulimit -u; ulimit -f; ulimit -n; "
                       "head -c 3000000 /dev/zero > big; echo exit=$?; ls -l big | awk '{print $5}'")
    assert text.splitlines()[:5] == ["5", str(512 << 10), "4000", str(1 << 10), "256"]
    assert "exit=153" in text and text.splitlines()[-1] == str(1 << 20)  # SIGXFSZ at 1 MiB


def test_the_environment_is_an_allowlist(make_box, monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Oslo")
    monkeypatch.setenv("SOME_TOKEN", "canary")
    box = make_box(sandbox=interpreter_policy(passed_env=(("TZ", "Europe/Oslo"),)))
    env = dict(line.split("=", 1) for line in output(box, "env").splitlines() if "=" in line)
    assert env["TZ"] == "Europe/Oslo" and "SOME_TOKEN" not in env
    assert env["HOME"] == "/tmp/home" and env["PATH"].split(":")[0] == str(Path(os.sys.executable).parent)
    assert set(env) <= {"TZ", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "PAGER", "GIT_PAGER",
                        "GIT_TERMINAL_PROMPT", "PYTHONUNBUFFERED", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
                        "GIT_CONFIG_VALUE_0", "PATH", "PWD", "SHLVL", "_", "OLDPWD"}


def test_hidden_folders_stay_hidden_inside_a_readable_tree(make_box, tmp_path):
    shown = tmp_path / "toolchain"
    (shown / "secret").mkdir(parents=True)
    (shown / "bin.txt").write_text("tool\n")
    (shown / "secret" / "key").write_text("hidden")
    box = make_box(sandbox=interpreter_policy(read_only=(*interpreter_policy().read_only, str(shown)),
                                              hidden=(str(shown / "secret"),)))
    text = output(box, f"cat {shown / 'bin.txt'}; ls -A {shown / 'secret'} | wc -l")
    assert text.splitlines() == ["tool", "0"]


def test_without_a_sandbox_commands_are_refused_with_how_to_enable_one(make_box):
    box = make_box(sandbox=interpreter_policy(bwrap="/nonexistent/bwrap"))
    outcome = box.execute(call("shell", command="echo should-not-run"))
    assert outcome.is_error and "should-not-run" not in outcome.text
    assert outcome.text.startswith("Commands cannot run: no sandbox is available on this machine "
                                   "(`/nonexistent/bwrap` (bubblewrap) is not installed).")
    assert "apt-get install bubblewrap" in outcome.text and "ATRIUM_SANDBOX=off" in outcome.text
    assert box.job_statuses() == ()


def test_the_operators_opt_out_runs_unconfined_but_still_with_the_allowlisted_environment(make_box, worktree,
                                                                                        monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary")
    box = make_box(sandbox=dataclasses.replace(interpreter_policy(), enabled=False))
    text = output(box, "pwd; env")
    assert text.splitlines()[0] == str(worktree.resolve()) and "sk-canary" not in text


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root hub hands files over to the sandbox user")
def test_hand_over_never_follows_a_symlink(tmp_path):
    root = tmp_path / "wt"
    (root / "d").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("root's")
    (root / "d" / "link").symlink_to(victim)
    (root / ".git").write_text("gitdir: x")
    hand_over(root, 65534, 65534)
    assert victim.stat().st_uid == 0 and (root / ".git").stat().st_uid == 0
    assert (root / "d").stat().st_uid == 65534 and os.lstat(root / "d" / "link").st_uid == 65534


def test_a_command_line_is_what_its_parts_say(tmp_path):
    place = Place(worktree=tmp_path / "wt", tmp=tmp_path / "tmp", git_dir=tmp_path / "repo" / ".git")
    place.worktree.mkdir()
    prepare(SandboxPolicy(), place)
    argv = confine(SandboxPolicy(bwrap="true"), place, "ls").argv
    assert argv[-3:] == ["/bin/bash", "-c", "ls"]
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    assert argv[argv.index("--bind") + 1: argv.index("--bind") + 3] == [str(place.tmp), "/tmp"]
    assert any(a.startswith("--nproc=") for a in argv) and any(a.startswith("--fsize=") for a in argv)
    with_network = confine(SandboxPolicy(bwrap="true"), dataclasses.replace(place, network=True), "ls").argv
    assert "--unshare-net" in with_network and str(CONFINER) in with_network


ALONE = Path(__file__).resolve().parents[2] / "as_an_ordinary_user.py"
IN_A_VENV = r"""
import importlib.util, subprocess, sys
from pathlib import Path
sys.path.insert(0, sys.argv[4])  # pyseccomp, which the bare venv lacks
spec = importlib.util.spec_from_file_location("alone", sys.argv[1])
alone = importlib.util.module_from_spec(spec)
spec.loader.exec_module(alone)
sandbox = alone.load_sandbox()
handover = sys.modules["agents.tools.handover"]
policy = sandbox.interpreter_policy()
place = sandbox.Place(worktree=Path(sys.argv[2]), tmp=Path(sys.argv[3]))
handover.prepare(policy, place)
confined = sandbox.confine(policy, place, "python -c 'import sys; print(sys.prefix)'")
with sandbox.launched(confined) as (argv, pass_fds):
    done = subprocess.run(argv, env=confined.env, cwd=confined.cwd, capture_output=True, text=True, pass_fds=pass_fds)
print(done.returncode, done.stdout.strip(), done.stderr.strip())
"""


def test_python_runs_when_the_hubs_venv_was_made_from_a_link_under_tmp(tmp_path):
    """CI makes its venv from `.ci/bin/python3`, a link inside the checkout under /tmp: the
    venv's `python` points through it, and the sandbox's private /tmp would hide it."""
    import subprocess
    import sys

    shim = tmp_path / "ci" / "bin" / "python3"
    shim.parent.mkdir(parents=True)
    shim.symlink_to(os.path.realpath(sys.executable))
    venv = tmp_path / "venv"
    subprocess.run([str(shim), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    assert os.readlink(venv / "bin" / "python3").startswith(str(shim.parent)) or \
        os.path.realpath(venv / "bin" / "python3") == os.path.realpath(sys.executable)
    (tmp_path / "wt").mkdir()
    import pyseccomp

    (tmp_path / "lib").mkdir()
    shutil.copy(pyseccomp.__file__, tmp_path / "lib")
    done = subprocess.run([str(venv / "bin" / "python3"), "-c", IN_A_VENV, str(ALONE), str(tmp_path / "wt"),
                           str(tmp_path / "tmp"), str(tmp_path / "lib")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1)[0] == "0", done.stdout
    assert str(venv) in done.stdout


def test_a_hub_running_as_an_ordinary_user_confines_commands_in_a_user_namespace(as_an_ordinary_user):
    """The Docker image runs the hub as `atrium`: bubblewrap then makes a user namespace."""
    place = as_an_ordinary_user.place("room")
    answer = as_an_ordinary_user([place], [[0, "id -u; echo made > made; touch /etc/x 2>&1; ls /proc | grep -c '^[0-9]'"]])
    out = answer["results"][0]["out"]
    lines = out.split()
    assert answer["uid"] == 65534 and not answer["drops_user"]
    assert lines[0] == "65534" and "Read-only" in out and int(lines[-1]) <= 4, out
    assert (Path(place["worktree"]) / "made").stat().st_uid == 65534  # the hub's own user, not root
