from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rooms.repository.git import GitError, git
from rooms.repository.intent import intent_read, intent_relpath, intent_write, render_intent

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


# --- commits that must not depend on the person's git setup, or leave anything behind ----


@pytest.fixture
def signing_home(tmp_path, monkeypatch) -> Path:
    """A HOME whose git config demands signed commits with a signer that always fails."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    return home


def test_the_intent_commit_is_unsigned_even_when_the_persons_config_demands_signing(repo, signing_home):
    # The configuration really is in force for a plain git; the hub's ignores it.
    identity = {"GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
                "GIT_COMMITTER_EMAIL": "p@x"}
    plain = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "signed?"], cwd=repo,
                           capture_output=True, text=True, env={**os.environ, **identity})
    assert plain.returncode != 0 and "gpg" in plain.stderr
    assert intent_write(repo_path=repo, task_id=5, text="objective\n") is True
    assert git("show", f"HEAD:{intent_relpath(5)}", cwd=repo) == "objective\n"
    assert git("status", "--porcelain", cwd=repo) == ""


def test_the_intent_commit_skips_the_repositorys_hooks(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    assert intent_write(repo_path=repo, task_id=6, text="objective\n") is True
    assert git("status", "--porcelain", cwd=repo) == ""


def test_a_new_intent_that_cannot_be_staged_leaves_the_checkout_clean(repo):
    head = git("rev-parse", "HEAD", cwd=repo)
    (repo / ".git" / "index.lock").write_text("")  # another git process holds the index
    with pytest.raises(GitError, match="index.lock"):
        intent_write(repo_path=repo, task_id=7, text="objective\n")
    (repo / ".git" / "index.lock").unlink()
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""
    assert not (repo / ".atrium").exists()  # not even the empty folders
    assert git("rev-parse", "HEAD", cwd=repo) == head


def test_a_new_intent_whose_commit_fails_is_unstaged_and_removed(repo):
    head = git("rev-parse", "HEAD", cwd=repo)
    (repo / ".git" / "refs" / "heads" / "main.lock").write_text("")  # the branch cannot move
    with pytest.raises(GitError):
        intent_write(repo_path=repo, task_id=8, text="objective\n")
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""
    assert git("ls-files", cwd=repo).split() == ["README.md"]
    assert not (repo / ".atrium").exists()
    assert git("rev-parse", "HEAD", cwd=repo) == head


def test_a_changed_intent_whose_commit_fails_is_put_back_as_it_was(repo):
    intent_write(repo_path=repo, task_id=9, text="first version\n")
    head = git("rev-parse", "HEAD", cwd=repo)
    (repo / ".git" / "refs" / "heads" / "main.lock").write_text("")
    with pytest.raises(GitError):
        intent_write(repo_path=repo, task_id=9, text="second version\n")
    assert intent_read(repo_path=repo, task_id=9) == "first version\n"
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == ""
    assert git("diff", "--cached", "--name-only", cwd=repo) == ""
    assert git("rev-parse", "HEAD", cwd=repo) == head
