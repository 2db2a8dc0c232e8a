"""Session worktrees: one branch and checkout per session, merged into main one at a time.

The room repository is a non-bare repo with ``main`` checked out. A session works in
``<worktrees_dir>/<session id>`` on ``atrium/session-<id>``. Merging holds the room's
repository lock (``rooms.repository.lock``, shared with intent-file commits, so one writer at a
time touches main; creating, committing in and removing worktrees hold it too), computes the merge with ``git merge-tree --write-tree`` without
touching any checkout, and only if it is clean creates the merge commit and
fast-forwards main to it. A conflict leaves main exactly as it was.
Nothing here imports Django: paths come in as arguments.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agents.tools.beneath import PathRefused, read_bytes
from agents.tools.text import clean_text
from rooms.repository.git import GitError, git
from rooms.repository.hub_files import HUB_OWNED
from rooms.repository.lock import room_repo_lock
from rooms.repository.trees import checkout_refused

logger = logging.getLogger(__name__)

MAIN_BRANCH = "main"


class WorktreeError(RuntimeError):
    """A worktree operation could not be carried out; the message says why."""


class CheckoutTooLarge(WorktreeError):
    """A branch's checkout would pass the bounds a room's checkout is held to."""


@dataclass(frozen=True, slots=True)
class Worktree:
    path: Path
    branch: str
    repo: Path


MergeStatus = Literal["merged", "up_to_date", "conflict"]


@dataclass(frozen=True, slots=True)
class MergeResult:
    status: MergeStatus
    branch: str
    main_before: str
    main_after: str  # equal to main_before unless status == "merged"
    conflicts: tuple[str, ...] = ()
    detail: str = ""  # git's conflict messages, for people resolving a needs_merge
    # Not the session's to resolve (files only the hub writes, a tree too large): a person's.
    for_a_person: bool = False

    @property
    def merged(self) -> bool:
        return self.status != "conflict"


def session_branch(session_id: int | str) -> str:
    return f"atrium/session-{session_id}"


def registered_worktrees(repo: Path) -> dict[Path, str | None]:
    """Registered worktree paths and the branch each has checked out (``None``: detached)."""
    found: dict[Path, str | None] = {}
    current: Path | None = None
    for line in git("worktree", "list", "--porcelain", cwd=repo).splitlines():
        if line.startswith("worktree "):
            current = Path(os.path.realpath(line.removeprefix("worktree ")))
            found[current] = None
        elif line.startswith("branch ") and current is not None:
            found[current] = line.removeprefix("branch refs/heads/")
    return found


def _branch_exists(repo: Path, branch: str) -> bool:
    completed = git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo,
                    check=False)
    return bool(completed.strip())


# Build and test droppings that a session's commit must never carry into main, even
# when the repository has no .gitignore (shared by all worktrees via the common dir).
HUB_EXCLUDES = ("__pycache__/", "*.py[cod]", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", "node_modules/")


def _ensure_excludes(repo: Path) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    current = exclude.read_text().splitlines() if exclude.exists() else []
    missing = [pattern for pattern in HUB_EXCLUDES if pattern not in current]
    if missing:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a") as handle:
            handle.write("\n# added by Atrium\n" + "\n".join(missing) + "\n")


def worktree_create(*, repo: Path, worktrees_dir: Path, session_id: int | str, base: str = MAIN_BRANCH,
                    max_checkout_bytes: int | None = None, max_checkout_files: int | None = None) -> Worktree:
    """The session's worktree, created on first call and found again on every later one.

    The checkout is made under a temporary name and moved into place when complete, so
    a crash mid-checkout never leaves a half-filled worktree at the final path. Every
    step holds the room lock: a ``worktree prune`` of one worker racing another's ``add``
    or ``move`` breaks the other's checkout (``could not open .git/worktrees/…/locked``).
    The session's branch, checked out again (a session resumed elsewhere), is held to the
    ``max_checkout_*`` bounds a merge is: its commits may hold one file linked many times.
    """
    repo = Path(os.path.realpath(repo))
    worktrees_dir.mkdir(parents=True, exist_ok=True)
    with room_repo_lock(repo):
        return _worktree_create_locked(repo, worktrees_dir, session_id, base, (max_checkout_bytes, max_checkout_files))


def _worktree_create_locked(repo: Path, worktrees_dir: Path, session_id: int | str, base: str,
                            bounds: tuple[int | None, int | None]) -> Worktree:
    """worktree_create's work; called while holding the room lock."""
    final = Path(os.path.realpath(worktrees_dir)) / str(session_id)
    partial = final.with_name(f".{final.name}.partial")
    branch = session_branch(session_id)
    _ensure_excludes(repo)
    git("worktree", "prune", cwd=repo)  # forget worktrees whose directories are gone
    registered = registered_worktrees(repo)
    if final in registered:
        if registered[final] != branch:
            raise WorktreeError(f"{final} is a worktree of {registered[final]!r}, not {branch!r}")
        return Worktree(path=final, branch=branch, repo=repo)
    if final.exists():
        raise WorktreeError(f"{final} exists but is not a worktree of {repo}; move it away")
    if partial in registered:
        git("worktree", "remove", "--force", str(partial), cwd=repo)
    if partial.exists():
        shutil.rmtree(partial)
    if _branch_exists(repo, branch):
        max_bytes, max_files = bounds
        if max_bytes is not None and (reason := checkout_refused(repo, f"refs/heads/{branch}", max_bytes=max_bytes,
                                                                 max_files=max_files or 1 << 62)):
            raise CheckoutTooLarge(f"{branch} cannot be checked out again: {reason}")
        git("worktree", "add", str(partial), branch, cwd=repo)
    else:
        git("worktree", "add", "-b", branch, str(partial), base, cwd=repo)
    git("worktree", "move", str(partial), str(final), cwd=repo)
    return Worktree(path=final, branch=branch, repo=repo)


def merge_under_way(worktree: Worktree) -> bool:
    """Whether main is being merged into the worktree (a conflict handed back): a commit
    now would conclude the merge with whatever the files hold."""
    try:
        return (admin_dir(worktree) / "MERGE_HEAD").exists()
    except WorktreeError:
        return False


def worktree_commit(*, worktree: Worktree, message: str, author: str | None = None) -> str | None:
    """Commit every change in the worktree on its branch; the new commit, or None if clean.

    ``author`` is ``"Name <email>"`` (e.g. the agent); the committer is the hub. Nothing
    under ``.atrium/`` is committed: intent files belong to the hub and the people, and a
    shell command that rewrote one must not reach main through a merge.
    """
    path = worktree.path
    # Not under the room lock: commits on their own branches may run side by side (git
    # locks each ref), and `git add --all` over a large worktree must not hold up every
    # claim, merge and intent write of the room. `gc --auto` detaches on its own.
    # The repository is named explicitly, never found through the worktree's `.git`
    # file: the worktree's files are the agent's, its repository the hub's.
    where = (f"--git-dir={admin_dir(worktree)}", f"--work-tree={path}")
    nested = nested_repositories(where, path)
    git(*where, "add", "--all", "--", ".", ":(exclude).atrium",
        *(f":(exclude,literal){folder}" for folder in nested), cwd=path)
    # Staged there by a shell command. While main is being merged in, main's intent files
    # are the ones to keep: HEAD's would undo main's in the merge commit.
    merging = merge_under_way(worktree)
    git(*where, "reset", "--quiet", "MERGE_HEAD" if merging else "HEAD", "--", HUB_OWNED, cwd=path)
    # A merge resolved by keeping the branch's side stages nothing and is still a commit.
    if not merging and not git(*where, "diff", "--cached", "--name-only", cwd=path).strip():
        return None
    # A person's global git config may demand signing; the hub's commits are unsigned.
    if nested:
        logger.warning("not committed in %s: nested repositories %s", path, ", ".join(nested))
        message += ("\n\nNot committed: " + ", ".join(nested) + " (nested repositories: the hub commits none)")
    args = ["-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", message]
    if author:
        args.append(f"--author={author}")
    git(*where, *args, cwd=path)
    return git(*where, "rev-parse", "HEAD", cwd=path).strip()


def nested_repositories(where: tuple[str, ...], path: Path) -> tuple[str, ...]:
    """The folders of the worktree that are repositories of their own (a ``.git`` inside,
    made by a shell command): git would record each as a submodule and, from then on,
    look into it, running what its configuration says. They stay out of every commit."""
    untracked = git(*where, "ls-files", "--others", "--exclude-standard", "-z", cwd=path)
    return tuple(entry.rstrip("/") for entry in untracked.split("\0") if entry.endswith("/"))


@dataclass(frozen=True, slots=True)
class BroughtIn:
    """Main merged into a session's branch in its worktree, for the agent to finish."""

    conflicts: tuple[str, ...]  # paths left with conflict markers (empty: merged cleanly)
    merged_meanwhile: tuple[str, ...]  # main's commits the branch did not have, one line each
    texts: dict[str, str]  # each conflicting file's text, markers included


def worktree_bring_in(*, worktree: Worktree, target: str = MAIN_BRANCH) -> BroughtIn:
    """Start merging ``target`` into the session's branch in its worktree and leave the
    merge for the agent: conflicts stay in the files as markers, and the next
    ``worktree_commit`` records the merge. A merge already under way is reported again.
    The worktree must be committed (``worktree_commit``) first."""
    path = worktree.path
    where = (f"--git-dir={admin_dir(worktree)}", f"--work-tree={path}")
    if not (admin_dir(worktree) / "MERGE_HEAD").exists():
        git(*where, "-c", "commit.gpgsign=false", "merge", "--no-ff", "--no-commit", "--quiet", target,
            cwd=path, check=False)
        if not (admin_dir(worktree) / "MERGE_HEAD").exists():
            raise WorktreeError(f"{target} could not be merged into {worktree.branch} in {path}")
    log = git(*where, "log", "--oneline", "--no-decorate", "HEAD..MERGE_HEAD", cwd=path)
    unmerged = git(*where, "diff", "--name-only", "--diff-filter=U", "-z", cwd=path)
    conflicts = tuple(dict.fromkeys(p for p in unmerged.split("\0") if p))
    texts = {relative: text for relative in conflicts if (text := _worktree_text(path, relative)) is not None}
    return BroughtIn(conflicts=conflicts, merged_meanwhile=tuple(log.splitlines()), texts=texts)


def branch_diff(*, repo: Path, branch: str, target: str = MAIN_BRANCH) -> str:
    """``git diff target...branch`` of committed refs in the room repository (a review's
    diff): what the branch changed since it left ``target``, the hub's files left out.
    Read from the repository, never through a worktree, with no external diff driver or
    text conversion, and every file as text (the repository's attributes are the agents'
    to write: ``*.py -diff`` would hide a change from its reviewer as "binary"). Made
    storable (``clean_text``): a binary file's NUL bytes are marked, as in tool output."""
    return clean_text(git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--stat", "--patch",
                          f"{target}...{branch}", "--", ".", f":(exclude){HUB_OWNED}", cwd=repo))


def worktree_unresolved(*, worktree: Worktree) -> tuple[str, ...]:
    """The files of a merge under way that still hold conflict markers; () when none is."""
    merge_head = admin_dir(worktree) / "MERGE_HEAD"
    if not merge_head.exists():
        return ()
    # The merge's conflicts, computed again: the index forgets them once a file is staged,
    # markers and all (a shell `git add`).
    _tree, conflicts, _messages = _preflight(worktree.repo, worktree.branch, merge_head.read_text().strip(),
                                             worktree.branch)
    return tuple(p for p in conflicts if CONFLICT_MARKER.search(_worktree_text(worktree.path, p) or ""))


# Seven or more: a repository's conflict-marker-size may make them longer.
CONFLICT_MARKER = re.compile(r"^(?:<{7,}|>{7,})(?: |$)", re.MULTILINE)
MAX_CONFLICT_FILE_BYTES = 256 * 1024


def _worktree_text(worktree_path: Path, relative: str) -> str | None:
    """A conflicting file's text as the hub may read it: a regular file inside the
    worktree, reached without following any link (the agent writes there), at most
    MAX_CONFLICT_FILE_BYTES; None otherwise (deleted on one side, binary, too large)."""
    try:
        data = read_bytes(worktree_path, relative, links=False, limit=MAX_CONFLICT_FILE_BYTES)
        return None if data is None or len(data) > MAX_CONFLICT_FILE_BYTES else data.decode()
    except (OSError, PathRefused, UnicodeDecodeError):
        return None


def admin_dir(worktree: Worktree) -> Path:
    """The worktree's folder in the room repository's ``.git/worktrees``, found by what
    the repository records (each folder's ``gitdir`` names its checkout)."""
    checkout = os.path.realpath(worktree.path / ".git")
    for gitdir_file in (Path(worktree.repo) / ".git" / "worktrees").glob("*/gitdir"):
        try:
            recorded = gitdir_file.read_text().strip()
        except FileNotFoundError:  # another session's worktree, being made or removed meanwhile
            continue
        if os.path.realpath(recorded) == checkout:
            return gitdir_file.parent
    raise WorktreeError(f"{worktree.path} is not a registered worktree of {worktree.repo}")


def _rev(repo: Path, ref: str) -> str:
    return git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=repo).strip()


def _preflight(repo: Path, main: str, branch: str, target: str) -> tuple[str | None, tuple[str, ...], str]:
    """Merge in memory: (tree, (), "") if clean, (None, conflicting paths, messages) if not."""
    completed = git("merge-tree", "--write-tree", "--name-only", "-z", main, branch, cwd=repo,
                    check=False)
    # Output: tree oid NUL, then (on conflict) path NUL ... NUL, then NUL and messages.
    head, _, rest = completed.partition("\0")
    tree = head.strip()
    paths_part, _, messages = rest.partition("\0\0")
    paths = tuple(dict.fromkeys(p for p in paths_part.split("\0") if p))
    if paths or not tree:
        if not tree:  # git refused outright (e.g. unrelated histories)
            raise WorktreeError(f"cannot merge {branch} into {target}: {completed.strip()}")
        return None, paths, messages.replace("\0", "\n").strip()
    return tree, (), ""


def worktree_merge(*, repo: Path, branch: str, message: str | None = None, target: str = MAIN_BRANCH,
                   max_checkout_bytes: int | None = None, max_checkout_files: int | None = None,
                   expect_tip: str | None = None) -> MergeResult:
    """Merge ``branch`` into ``target`` (the room's main branch, whatever its name) under
    the room lock; a conflict changes nothing. A merged tree a checkout could not hold
    (``max_checkout_*``: every path's size counts, however the session linked its files)
    is refused the same way, for a person to decide.

    Idempotent: merging a branch that main already contains answers ``up_to_date``
    (so a worker that crashed after merging can safely merge again). ``expect_tip``: the
    branch must be at that commit (what a worker pushed; not what another pushed since).
    """
    repo = Path(os.path.realpath(repo))
    with room_repo_lock(repo):
        main_before = _rev(repo, target)
        tip = _rev(repo, branch)
        if expect_tip is not None and tip != expect_tip:
            raise WorktreeError(f"{branch} is at {tip[:10]}, not at {expect_tip[:10]} as this worker pushed it: "
                                "another worker has the session now")
        if _is_ancestor(repo, tip, main_before):
            return MergeResult(status="up_to_date", branch=branch, main_before=main_before,
                               main_after=main_before)
        hub_owned = git("diff", "--name-only", f"{main_before}...{tip}", "--", HUB_OWNED, cwd=repo).split()
        if hub_owned:
            # Commits made with shell git can still carry them: a person decides.
            return MergeResult(status="conflict", branch=branch, main_before=main_before,
                               main_after=main_before, conflicts=tuple(hub_owned), for_a_person=True,
                               detail=f"the session changed files under {HUB_OWNED}/, which only the hub writes")
        tree, conflicts, detail = _preflight(repo, main_before, tip, target)
        if tree is None:
            return MergeResult(status="conflict", branch=branch, main_before=main_before,
                               main_after=main_before, conflicts=conflicts, detail=detail)
        if max_checkout_bytes is not None and (reason := checkout_refused(
                repo, tree, max_bytes=max_checkout_bytes, max_files=max_checkout_files or 1 << 62)):
            return MergeResult(status="conflict", branch=branch, main_before=main_before, main_after=main_before,
                               for_a_person=True, detail=f"{target} after the merge would be too large: {reason}")
        commit = git("-c", "commit.gpgsign=false", "commit-tree", tree, "-p", main_before, "-p", tip, "-m",
                     message or f"Merge {branch}", cwd=repo).strip()
        advance_main(repo, main_before, commit, target)
        return MergeResult(status="merged", branch=branch, main_before=main_before,
                           main_after=commit)


def _is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    try:
        git("merge-base", "--is-ancestor", ancestor, descendant, cwd=repo)
    except GitError as exc:
        if exc.returncode == 1:
            return False
        raise
    return True


def advance_main(repo: Path, old: str, new: str, target: str) -> None:
    """Move ``target`` from ``old`` to its descendant ``new``, updating the checkout if it is
    checked out."""
    head = git("symbolic-ref", "--quiet", "HEAD", cwd=repo, check=False).strip()
    if head == f"refs/heads/{target}":
        # A fast-forward updates ref, index and files together, and refuses (changing
        # nothing) if a local edit in the room checkout would be overwritten.
        try:
            git("merge", "--ff-only", "--quiet", new, cwd=repo)
        except GitError as exc:
            raise WorktreeError(f"{target} could not be advanced in {repo}: {exc.stderr}") from exc
    else:
        git("update-ref", f"refs/heads/{target}", new, old, cwd=repo)


def worktree_remove(*, worktree: Worktree, delete_branch: bool = False) -> None:
    """Remove the worktree (idempotent); keep the branch unless ``delete_branch``. Under
    the room lock, like every change to the room repository."""
    with room_repo_lock(worktree.repo):
        worktree_remove_locked(worktree, delete_branch)


def worktree_remove_locked(worktree: Worktree, delete_branch: bool) -> None:
    """``worktree_remove``'s work, for a caller that holds the room lock already."""
    repo = worktree.repo
    if Path(os.path.realpath(worktree.path)) in registered_worktrees(repo):
        git("worktree", "remove", "--force", str(worktree.path), cwd=repo)
    elif worktree.path.exists():
        shutil.rmtree(worktree.path)
    git("worktree", "prune", cwd=repo)
    if delete_branch and _branch_exists(repo, worktree.branch):
        git("branch", "-D", worktree.branch, cwd=repo)
