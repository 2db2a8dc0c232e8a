from __future__ import annotations

from pathlib import Path

import pytest

from hub.git import git
from observations.intent import intent_read, intent_relpath, intent_write, render_intent

CONSTRAINTS = "  Don't touch vendor/.\n\n- keep   the public API\n   (really!)  "


def test_constraints_are_kept_verbatim_whitespace_and_all():
    text = render_intent(task_id=7, title="Fix", objective="Fix the parser", prerequisites="",
                         definition_of_done="tests pass", constraints=CONSTRAINTS)
    assert CONSTRAINTS in text
    assert "## Prerequisites\n(none given)" in text
    assert text.startswith("# Task 7: Fix")


@pytest.fixture
def repo(tmp_path) -> Path:
    git("init", "-q", "-b", "main", str(tmp_path / "repo"), cwd=tmp_path)
    repo = tmp_path / "repo"
    (repo / "README.md").write_text("hi\n")
    git("add", "README.md", cwd=repo)
    git("commit", "-q", "-m", "init", cwd=repo)
    return repo


def test_the_intent_is_committed_to_the_room_repository(repo):
    text = render_intent(task_id=3, title="T", objective="O", prerequisites="P", definition_of_done="D",
                         constraints=CONSTRAINTS)
    assert intent_write(repo_path=repo, task_id=3, text=text, author="olga") is True
    assert intent_read(repo_path=repo, task_id=3) == text
    assert git("show", f"HEAD:{intent_relpath(3)}", cwd=repo) == text
    assert "Intent of task 3 by olga" in git("log", "-1", "--format=%s", cwd=repo)
    assert git("status", "--porcelain", cwd=repo) == ""


def test_writing_the_same_intent_twice_commits_nothing(repo):
    intent_write(repo_path=repo, task_id=3, text="same\n")
    head = git("rev-parse", "HEAD", cwd=repo)
    assert intent_write(repo_path=repo, task_id=3, text="same\n") is False
    assert git("rev-parse", "HEAD", cwd=repo) == head


def test_a_missing_intent_file_reads_as_none(repo):
    assert intent_read(repo_path=repo, task_id=99) is None
