"""What happened in a room's repository, read without changing anything: what merged
into main since a commit.

Read-only git only, on the room's repository (never a worktree, whose ``.git`` file is
the agent's to write). Nothing here imports Django.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import GitError, git
from rooms.repository.hub_files import HUB_OWNED

_RECORD, _FIELD = "\x1e", "\x1f"


@dataclass(frozen=True, slots=True)
class MainCommit:
    sha: str
    subject: str
    files: tuple[str, ...]  # changed against its first parent, hub-owned files left out


def branch_tip(repo: Path, branch: str) -> str:
    return git("rev-parse", "--verify", f"{branch}^{{commit}}", cwd=repo).strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    """Whether ``descendant`` contains ``ancestor`` (False too when either is missing)."""
    try:
        git("merge-base", "--is-ancestor", ancestor, descendant, cwd=repo)
    except GitError:
        return False
    return True


def fork_point(repo: Path, branch: str, target: str) -> str:
    """Where ``branch`` left ``target``: the base of a session that recorded none."""
    return git("merge-base", target, branch, cwd=repo).strip()


def main_commits_since(repo: Path, base: str, target: str) -> tuple[MainCommit, ...]:
    """The commits that entered ``target`` after ``base`` along its first parents (merges
    of sessions, intent commits), oldest first, each with the files it changed; commits
    that changed only hub-owned files are left out. Empty if ``base`` is unknown."""
    repo = Path(os.path.realpath(repo))
    try:
        out = git("log", "--first-parent", "--diff-merges=first-parent", "--name-only", "-z",
                  f"--format={_RECORD}%H{_FIELD}%s{_FIELD}", f"{base}..{target}", cwd=repo)
    except GitError:
        return ()
    commits = []
    for record in out.split(_RECORD)[1:]:
        sha, subject, rest = record.split(_FIELD, 2)
        files = tuple(p.strip("\n") for p in rest.split("\0") if p.strip("\n"))
        files = tuple(p for p in files if p != HUB_OWNED and not p.startswith(f"{HUB_OWNED}/"))
        if files:
            commits.append(MainCommit(sha=sha, subject=subject, files=files))
    return tuple(reversed(commits))
