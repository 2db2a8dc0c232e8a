"""What a tree may bring into a room, judged on git's objects before anything is written.
On the code before: a session's hard links (one inode, counted once by the disk limit)
were merged into main as many paths and written out whole into its checkout and every
later worktree; and a tag of a tag carried past the import check what it refuses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rooms.errors import RoomError
from rooms.repository.git import git
from rooms.repository.prepare import BundleRepository, TemplateRepository
from rooms.repository.worktrees import worktree_commit, worktree_create, worktree_merge
from rooms.services import room_create
from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1 << 20


def plain_git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@x", "GIT_COMMITTER_NAME": "m",
           "GIT_COMMITTER_EMAIL": "m@x"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def source_repo(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    plain_git("init", "-q", "-b", "main", cwd=source)
    (source / "README.md").write_text("hello\n")
    return source


def test_a_merge_a_checkout_could_not_hold_is_left_to_a_person_and_main_stays(tmp_path):
    """2 MB of data linked under 48 names: a checkout writes 96 MB. The merge is refused
    before main moves, for a person (the session ends in needs_merge with the reason)."""
    room = room_create(owner=make_user("attacker"), name="Amplify", source=TemplateRepository(source_repo(tmp_path)))
    repo = Path(room.repo_path)
    main_before = git("rev-parse", "main", cwd=repo).strip()
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    (worktree.path / "links").mkdir()
    (worktree.path / "links" / "0").write_bytes(os.urandom(2 * MB))
    for n in range(1, 48):
        os.link(worktree.path / "links" / "0", worktree.path / "links" / str(n))  # the agent's `ln`
    worktree_commit(worktree=worktree, message="work")

    result = worktree_merge(repo=repo, branch=worktree.branch, max_checkout_bytes=8 * MB, max_checkout_files=10_000)
    assert result.status == "conflict" and result.for_a_person
    assert "main after the merge would be too large: its files add up to more than the 8 MB a room's checkout may hold" in result.detail
    assert git("rev-parse", "main", cwd=repo).strip() == main_before
    assert not (repo / "links").exists()
    many = worktree_merge(repo=repo, branch=worktree.branch, max_checkout_bytes=1 << 30, max_checkout_files=40)
    assert not many.merged and "more than the 40 files" in many.detail


def test_a_session_branch_a_checkout_could_not_hold_is_not_checked_out_again(tmp_path):
    """The same links on the session's own branch: a session resumed on another worker
    checks its branch out again, where 2 MB would become 96 MB."""
    import shutil

    from rooms.repository.worktrees import CheckoutTooLarge

    room = room_create(owner=make_user("attacker"), name="Again", source=TemplateRepository(source_repo(tmp_path)))
    repo = Path(room.repo_path)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    (worktree.path / "links").mkdir()
    (worktree.path / "links" / "0").write_bytes(os.urandom(2 * MB))
    for n in range(1, 48):
        os.link(worktree.path / "links" / "0", worktree.path / "links" / str(n))
    worktree_commit(worktree=worktree, message="work")
    shutil.rmtree(worktree.path)  # the worker that held it is gone, and its disk
    # A tag of the branch's name (an import may bring one) is not what is checked out.
    git("tag", worktree.branch, git("rev-list", "--max-parents=0", "main", cwd=repo).split()[0], cwd=repo)
    with pytest.raises(CheckoutTooLarge, match="cannot be checked out again: its files add up to more than the 8 MB"):
        worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1,
                        max_checkout_bytes=8 * MB, max_checkout_files=10_000)
    assert not worktree.path.exists()
    again = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1,
                            max_checkout_bytes=1 << 30, max_checkout_files=10_000)  # within bounds: back
    assert (again.path / "links" / "47").stat().st_size == 2 * MB


def test_a_listing_far_past_the_file_bound_is_stopped_early(tmp_path):
    """A small repository can name 10**8 paths (one tree used many times over): the check
    stops reading at the bound, with git stopped, not after a listing of gigabytes."""
    import time

    from rooms.repository.trees import checkout_refused

    source = source_repo(tmp_path)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=source, input="x", check=True,
                          capture_output=True, text=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=source, input="".join(
        f"100644 blob {blob}\tf{n}\n" for n in range(100)), check=True, capture_output=True, text=True).stdout.strip()
    for _level in range(4):  # 100 ** 5 paths
        tree = subprocess.run(["git", "mktree"], cwd=source, input="".join(
            f"040000 tree {tree}\td{n}\n" for n in range(100)), check=True, capture_output=True,
            text=True).stdout.strip()
    started = time.monotonic()
    assert checkout_refused(source, tree, max_bytes=1 << 30, max_files=1000) == (
        "it holds more than the 1,000 files a room's checkout may hold")
    assert time.monotonic() - started < 10


def test_a_tag_of_a_tag_brings_in_nothing_the_import_refuses(tmp_path):
    """The tag is peeled to its commit and the commit's tree is checked: refused."""
    source = source_repo(tmp_path)
    plain_git("add", "-A", cwd=source)
    plain_git("commit", "-q", "-m", "c", cwd=source)
    plain_git("checkout", "-q", "--orphan", "evil", cwd=source)
    plain_git("rm", "-q", "-r", "--cached", ".", cwd=source)
    (source / "README.md").unlink()
    (source / ".atrium").mkdir()
    os.symlink("/etc", source / ".atrium" / "tasks")
    plain_git("add", ".atrium", cwd=source)
    plain_git("commit", "-q", "-m", "evil", cwd=source)
    plain_git("tag", "-a", "-m", "inner", "inner", "HEAD", cwd=source)
    plain_git("-c", "advice.nestedTag=false", "tag", "-a", "-m", "release", "v1", "inner", cwd=source)
    plain_git("tag", "-d", "inner", cwd=source)
    plain_git("checkout", "-q", "-f", "main", cwd=source)
    plain_git("branch", "-q", "-D", "evil", cwd=source)
    bundle = tmp_path / "evil.bundle"
    plain_git("bundle", "create", str(bundle), "--all", cwd=source)
    with pytest.raises(RoomError, match=r"v1: the repository ships \.atrium/"):
        room_create(owner=make_user("attacker"), name="Tagged", source=BundleRepository(bundle))


def test_a_branch_whose_name_holds_a_space_of_another_kind_is_checked_too(tmp_path):
    """A ref's name may hold a no-break space: split as whitespace, the name read as two
    refs (one of them main) and the hostile branch was never checked."""
    source = source_repo(tmp_path)
    plain_git("add", "-A", cwd=source)
    plain_git("commit", "-q", "-m", "c", cwd=source)
    plain_git("checkout", "-q", "-b", "evil\u00a0refs/heads/main", cwd=source)
    (source / ".atrium").mkdir()
    (source / ".atrium" / "x").write_text("planted\n")
    plain_git("add", ".atrium", cwd=source)
    plain_git("commit", "-q", "-m", "evil", cwd=source)
    plain_git("checkout", "-q", "main", cwd=source)
    bundle = tmp_path / "spaced.bundle"
    plain_git("bundle", "create", str(bundle), "--all", cwd=source)
    with pytest.raises(RoomError, match=r"the repository ships \.atrium/"):
        room_create(owner=make_user("attacker"), name="Spaced", source=BundleRepository(bundle))


def test_a_binary_file_in_a_review_diff_is_text_a_database_stores(tmp_path):
    """The diff shows binary files as text (--text): bytes that are not UTF-8, and NUL,
    read as U+FFFD, never as lone surrogates or NULs no database takes (PostgreSQL's text
    refuses NUL)."""
    from rooms.repository.worktrees import branch_diff
    from sessions.models import Review, Session, Task
    from tests.rooms.factories import make_agent

    owner = make_user("owner")
    room = room_create(owner=owner, name="Binary", source=TemplateRepository(source_repo(tmp_path)))
    repo = Path(room.repo_path)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    (worktree.path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x80 not utf-8")
    worktree_commit(worktree=worktree, message="a logo")
    diff = branch_diff(repo=repo, branch=worktree.branch)
    assert "logo.png" in diff and "\ufffd" in diff and "\0" not in diff
    task = Task.objects.create(room=room, title="t", objective="o", created_by=owner)
    session = Session.objects.create(task=task, agent=make_agent("author"), attempt=1)
    assert Review.objects.create(session=session, round=1, brief=diff).pk


def test_a_tag_of_a_tree_is_dropped_from_the_import(tmp_path):
    """`git checkout TREE -- .` writes a tree whole: a ref to one does not come in."""
    source = source_repo(tmp_path)
    plain_git("add", "-A", cwd=source)
    plain_git("commit", "-q", "-m", "c", cwd=source)
    link = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=source, input="/etc", check=True,
                          capture_output=True, text=True).stdout.strip()
    tasks = subprocess.run(["git", "mktree"], cwd=source, input=f"120000 blob {link}\ttasks\n", check=True,
                           capture_output=True, text=True).stdout.strip()
    root = subprocess.run(["git", "mktree"], cwd=source, input=f"040000 tree {tasks}\t.atrium\n", check=True,
                          capture_output=True, text=True).stdout.strip()
    plain_git("tag", "tree-tag", root, cwd=source)
    bundle = tmp_path / "tree.bundle"
    plain_git("bundle", "create", str(bundle), "--all", cwd=source)
    room = room_create(owner=make_user("attacker"), name="Trees", source=BundleRepository(bundle))
    assert "tree-tag" not in git("tag", "--list", cwd=Path(room.repo_path))


def test_a_tag_that_a_branchs_short_name_would_find_first_is_dropped_from_the_import(tmp_path):
    """git reads `main` as refs/tags/main before refs/heads/main: a bundle's tag named
    like a branch (or like the hub's own names) would make the hub's `main` another
    commit, one no check of main's ever saw."""
    source = source_repo(tmp_path)
    plain_git("add", "-A", cwd=source)
    plain_git("commit", "-q", "-m", "c", cwd=source)
    plain_git("branch", "-M", "main", cwd=source)
    plain_git("branch", "feature", cwd=source)
    plain_git("commit", "-q", "--allow-empty", "-m", "elsewhere", cwd=source)
    for name in ("main", "feature", "atrium/session-1", "v1.0"):
        plain_git("tag", name, "HEAD", cwd=source)
    plain_git("reset", "-q", "--hard", "HEAD~1", cwd=source)
    bundle = tmp_path / "shadow.bundle"
    plain_git("bundle", "create", str(bundle), "--all", cwd=source)
    room = room_create(owner=make_user("attacker"), name="Shadows", source=BundleRepository(bundle))
    repo = Path(room.repo_path)
    assert git("tag", "--list", cwd=repo).split() == ["v1.0"]
    assert git("rev-parse", "main", cwd=repo) == git("rev-parse", "refs/heads/main", cwd=repo)


def test_merged_attributes_change_nothing_the_hub_writes_or_shows_a_reviewer(tmp_path):
    """A session merges `.gitattributes` (the agents' to write): the hub's intent files are
    stored as written whatever they say (the encoding rule made every later task of the
    room fail), and the review's diff shows a change that `-diff` would call binary."""
    from rooms.repository.intent import intent_read, intent_write
    from rooms.repository.worktrees import branch_diff

    owner = make_user("owner")
    room = room_create(owner=owner, name="Attrs", source=TemplateRepository(source_repo(tmp_path)))
    repo = Path(room.repo_path)
    worktree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=1)
    (worktree.path / ".gitattributes").write_text(".atrium/** working-tree-encoding=UTF-16 eol=crlf\n*.py -diff\n")
    worktree_commit(worktree=worktree, message="tidy attributes")
    assert worktree_merge(repo=repo, branch=worktree.branch).merged

    assert intent_write(repo_path=repo, task_id=7, text="Objective: fix it\nline two\n")
    assert intent_read(repo_path=repo, task_id=7) == "Objective: fix it\nline two\n"
    assert git("show", "HEAD:.atrium/tasks/7/intent.md", cwd=repo) == "Objective: fix it\nline two\n"

    later = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=2)
    (later.path / "app.py").write_text("print('hidden change')\n")
    worktree_commit(worktree=later, message="a change")
    assert "print('hidden change')" in branch_diff(repo=repo, branch=later.branch)
