"""The worktree read with real git after real commands (sed -i, a heredoc, git apply,
mv, a formatter, the agent's own git commit), each change found with its kind and the
sha256 of what the file holds; and a worktree that tries to mislead or stall the hub
(a link to a file outside, a folder replaced by a link, a FIFO) read without following
or opening anything it should not."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from rooms.repository.worktrees import worktree_create
from sessions.runtime.file_changes import FileChange
from sessions.worker.file_reads import WorktreeReads
from tests.rooms.factories import make_git_repo

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db

PATCH = """--- a/app/util.py
+++ b/app/util.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


@pytest.fixture
def reads(tmp_path):
    repo = make_git_repo(tmp_path / "room", files={
        "app/config.py": "DEBUG = True\n", "app/util.py": "def add(a, b):\n    return a - b\n",
        "app/helpers.py": "def shout(text):\n    return text.upper()\n", "app/settings.json": '{"b": 2, "a": 1}',
        "patches/fix.patch": PATCH, ".gitignore": "*.log\n"})
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    return WorktreeReads(worktree)


def _run(worktree: Path, command: str) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    subprocess.run(["bash", "-c", command], cwd=worktree, check=True, env=env | {
        "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "agent",
        "GIT_COMMITTER_EMAIL": "a@x"})


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_shell_edit_is_found_with_its_kind_and_content(reads):
    root = Path(reads.worktree.path)
    _, reading = reads.file_changes(None)
    steps = [
        ("sed -i 's/True/False/' app/config.py", lambda: [FileChange("app/config.py", "modified",
                                                                     _sha(root / "app/config.py"))]),
        ("cat > app/logging_conf.py <<'EOF'\nLEVEL = 'INFO'\nEOF",
         lambda: [FileChange("app/logging_conf.py", "added", _sha(root / "app/logging_conf.py"))]),
        ("git apply patches/fix.patch", lambda: [FileChange("app/util.py", "modified", _sha(root / "app/util.py"))]),
        ("mv app/helpers.py app/text_helpers.py",
         lambda: [FileChange("app/text_helpers.py", "renamed", _sha(root / "app/text_helpers.py"),
                             old_path="app/helpers.py")]),
        ("python3 -m json.tool --sort-keys app/settings.json app/s.new && mv app/s.new app/settings.json",
         lambda: [FileChange("app/settings.json", "modified", _sha(root / "app/settings.json"))]),
        ("echo noise > build.log && cat app/config.py > /dev/null", lambda: []),  # ignored by git, and a read
        ("sed -i 's/False/True/' app/config.py", lambda: [FileChange("app/config.py", "modified",
                                                                     _sha(root / "app/config.py"))]),
        ("rm app/logging_conf.py", lambda: [FileChange("app/logging_conf.py", "deleted", "")]),
    ]
    for command, expected in steps:
        _run(root, command)
        changes, reading = reads.file_changes(reading)
        assert changes == expected(), command


def test_the_agents_own_commit_is_still_its_change(reads):
    root = Path(reads.worktree.path)
    _, reading = reads.file_changes(None)
    _run(root, "sed -i 's/True/False/' app/config.py && echo x > app/new.py && git add -A && git commit -qm mine")
    changes, reading = reads.file_changes(reading)
    assert changes == [FileChange("app/config.py", "modified", _sha(root / "app/config.py")),
                       FileChange("app/new.py", "added", _sha(root / "app/new.py"))]
    assert reads.file_changes(reading)[0] == []


def test_links_folders_swapped_for_links_and_fifos_are_read_without_following_or_blocking(reads, tmp_path):
    root = Path(reads.worktree.path)
    secret = tmp_path / "outside.txt"
    secret.write_text("the hub's own file\n")
    _, reading = reads.file_changes(None)
    os.symlink(secret, root / "link.txt")
    os.mkfifo(root / "pipe")
    (root / "app").rename(root / "app-real")
    os.symlink(tmp_path, root / "app")  # app/config.py would now read the hub's folder
    changes, _ = reads.file_changes(reading)
    by_path = {change.path: change for change in changes}
    assert by_path["link.txt"].sha256 == hashlib.sha256(os.fsencode(str(secret))).hexdigest()  # the link, not the file
    assert by_path["app"].sha256 == hashlib.sha256(os.fsencode(str(tmp_path))).hexdigest()
    assert by_path["app-real/config.py"].old_path == "app/config.py"  # moved; nothing read through the link
    assert "pipe" not in by_path or by_path["pipe"].sha256 == ""
    assert all(change.sha256 != _sha(secret) for change in changes)


def test_between_readings_the_kernel_names_the_paths_and_git_reads_only_those(reads, monkeypatch):
    import sessions.worker.file_reads as file_reads

    asked = []
    real = file_reads.dirty_files
    monkeypatch.setattr(file_reads, "dirty_files", lambda *a, **kw: asked.append(kw.get("paths")) or real(*a, **kw))
    root = Path(reads.worktree.path)
    _, reading = reads.file_changes(None)
    assert asked == [None]  # the first reading reads everything, the watch armed before it
    assert reads.file_changes(reading)[0] == [] and len(asked) == 1  # nothing changed: git is not asked at all
    _run(root, "mkdir -p deep/er && echo x > deep/er/made.py && echo y >> app/util.py")
    changes, reading = reads.file_changes(reading)
    assert [(c.path, c.kind) for c in changes] == [("app/util.py", "modified"), ("deep/er/made.py", "added")]
    assert asked[-1] == {"app/util.py", "deep/er/made.py"}
    (root / "app/config.py").write_text("written by a job between steps\n")  # no call ran it: still seen
    changes, reading = reads.file_changes(reading)
    assert [(c.path, c.kind) for c in changes] == [("app/config.py", "modified")]
    _run(root, "rm -r deep")  # a folder removed: its files are not named one by one, so all is read
    changes, reading = reads.file_changes(reading)
    assert [(c.path, c.kind) for c in changes] == [("deep/er/made.py", "deleted")] and asked[-1] is None
