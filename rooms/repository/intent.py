"""Intent files: a task's objective, prerequisites, definition of done and the
person's constraints, verbatim, committed to the room repository before the first
tool call. The file is rendered from the task's row, which sessions re-read at every
cycle start (sessions.services.tasks.task_intent): the two always say the same."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from agents.tools.beneath import (
    Located,
    located,
    read_bytes,
    regular_bytes,
    remove,
    remove_made_folders,
    write_atomically,
)
from rooms.repository.git import GitError, git
from rooms.repository.lock import room_repo_lock

logger = logging.getLogger(__name__)


def intent_relpath(task_id: int) -> str:
    return f".atrium/tasks/{task_id}/intent.md"


def render_intent(*, task_id: int, title: str, objective: str, prerequisites: str,
                  definition_of_done: str, constraints: str) -> str:
    def section(heading: str, body: str) -> str:
        return f"## {heading}\n{body.strip() or '(none given)'}\n"

    return "\n".join([
        f"# Task {task_id}: {title.strip()}\n",
        section("Objective", objective),
        section("Prerequisites", prerequisites),
        section("Definition of done", definition_of_done),
        # Not stripped or reflowed: the person's words exactly as typed.
        "## Constraints (the person's own words)\n" + (constraints if constraints.strip() else "(none given)") + "\n",
    ])


def intent_write(*, repo_path: Path | str, task_id: int, text: str, author: str = "") -> bool:
    """Write and commit the intent file on the room's main checkout.

    Returns False when the file already had exactly this text (nothing committed).
    The file and its folders are reached without following any link (the checkout holds
    what the room's repository brought): a link on the way raises PathRefused before
    anything is written. When git fails, the file and its index entry are put back as
    they were (and the folders made for it removed) before GitError propagates.
    """
    repo = Path(repo_path)
    relpath = intent_relpath(task_id)
    data = text.encode("utf-8")
    with room_repo_lock(repo), located(repo, relpath, links=False, make_parents=True,
                                       what="the room's repository") as where:
        before = regular_bytes(where)
        if before == data:
            return False
        index_entry = git("ls-files", "--stage", "--", relpath, cwd=repo).strip()
        staged = False
        try:
            write_atomically(where, data)
            head, blob, commit = _commit_of_one_file(repo, relpath, text,
                                                     f"Intent of task {task_id}{f' by {author}' if author else ''}")
            git("update-index", "--add", "--cacheinfo", f"100644,{blob},{relpath}", cwd=repo)
            staged = True
            git("update-ref", "HEAD", commit, head, cwd=repo)  # only from where it was read
        except BaseException:
            if staged:
                _restore_index_entry(repo, relpath, index_entry)
            _restore_file(repo, where, before)
            raise
    return True


def _commit_of_one_file(repo: Path, relpath: str, text: str, message: str) -> tuple[str, str, str]:
    """HEAD, and a blob of ``text`` with a commit on top of HEAD changing ``relpath`` to it
    and nothing else; the branch is not moved.

    Stored as given, whatever the repository's .gitattributes (the agents' to write) say
    of its path: no filter, no encoding, no end-of-line rule. Built in a scratch index
    from HEAD, so nothing else staged in the checkout comes along; unsigned and without
    hooks (a person's config may demand signing, the repository may have hooks)."""
    blob = git("hash-object", "-w", "--no-filters", "--stdin", cwd=repo, input=text).strip()
    head = git("rev-parse", "--verify", "HEAD^{commit}", cwd=repo).strip()
    with tempfile.TemporaryDirectory(prefix="atrium-index-") as scratch:
        index = Path(scratch) / "index"
        git("read-tree", head, cwd=repo, index_file=index)
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{relpath}", cwd=repo, index_file=index)
        tree = git("write-tree", cwd=repo, index_file=index).strip()
    commit = git("-c", "commit.gpgsign=false", "commit-tree", tree, "-p", head, "-m", message, cwd=repo).strip()
    return head, blob, commit


def _restore_index_entry(repo: Path, relpath: str, entry: str) -> None:
    """Put back the index entry ``git ls-files --stage`` showed before (or none)."""
    try:
        if entry:
            mode, sha, _stage = entry.split("\t", 1)[0].split()
            git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{relpath}", cwd=repo)
        else:
            git("update-index", "--force-remove", "--", relpath, cwd=repo)
    except GitError as exc:
        # The failure being raised goes on; this one is worth a line in the log.
        logger.warning("could not restore the index entry of %s in %s: %s", relpath, repo, exc)


def _restore_file(repo: Path, where: Located, before: bytes | None) -> None:
    """The file as it was, through the same open folder (never through a link)."""
    if before is not None:
        write_atomically(where, before)
        return
    remove(where)
    remove_made_folders(repo, where.made)


def intent_read(*, repo_path: Path | str, task_id: int) -> str | None:
    """The intent file's text, or None when there is none; PathRefused when a link or
    anything but a regular file stands on its way."""
    data = read_bytes(repo_path, intent_relpath(task_id), links=False)
    return None if data is None else data.decode("utf-8", "replace")
