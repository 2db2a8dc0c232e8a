"""A worker's own copy of a room's repository, kept from the hub's git remote (issue 32):
on a machine that does not see the hub's folders, a session's worktree is made here,
its branch comes from the remote and goes back to it after each commit, and main is
fetched again before anything reads it.

The copy is an ordinary repository whose HEAD names a branch that never exists, so no
branch the hub fetches into is ever checked out in it (git would refuse to move it).
The worker's credential travels in git's environment for one command at a time
(``http.extraHeader``), never in a config file a session's sandbox could read.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rooms.repository.git import GitError, git
from rooms.repository.lock import room_repo_lock

# Named by the copy's HEAD and never made: nothing the hub fetches is checked out there.
_NO_BRANCH = "atrium-copy-has-no-checkout"
FETCH_SECONDS = 300  # a large room's first fetch
# What git (in the C locale) says when the hub did not answer, answered that it is busy
# or failing, or broke off: waiting fixes these. And when it would not let the worker in
# (a 401: the token's lease is not this worker's any more).
_UNREACHABLE = ("The requested URL returned error: 5", "The requested URL returned error: 429", "Failed to connect",
                "Could not resolve host", "Connection refused", "Connection timed out", "Operation timed out",
                "Empty reply from server", "Recv failure", "RPC failed", "early EOF",
                "the remote end hung up unexpectedly", "unexpected disconnect")
_SHUT_OUT = ("could not read Username", "Authentication failed", "The requested URL returned error: 401")


class HubUnreachable(RuntimeError):
    """The hub's git remote (or the hub) did not answer, or was busy: try again later."""


class HubShutOut(RuntimeError):
    """The hub would not let this worker in: the session's lease is not its own any more."""


class HubRefused(RuntimeError):
    """The hub answered and refused (a push its checks turned down, a bad request): asking
    again gets the same answer."""


def hub_failure(said: str, *, timed_out: bool = False) -> RuntimeError:
    """What an answer of git's (its stderr) or of the hub's means for the worker. What the
    hub wrote (``remote:`` lines) is read as its refusal, never as one of git's signs."""
    own = "\n".join(line for line in said.splitlines() if not line.startswith("remote:"))
    if timed_out or any(sign in own for sign in _UNREACHABLE):
        return HubUnreachable(f"the hub did not answer: {said.strip()}")
    if any(sign in own for sign in _SHUT_OUT):
        return HubShutOut("the hub would not let this worker in (its lease on the session is not its own)")
    return HubRefused(f"its git remote answered: {said.strip()}")


def _over_the_wire(*args: str, path: Path, remote: HubRemote) -> str:
    try:
        return git(*args, cwd=path, config=remote.config, timeout=FETCH_SECONDS)
    except GitError as exc:
        raise hub_failure(exc.stderr, timed_out=exc.returncode == -1) from exc


@dataclass(frozen=True)
class HubRemote:
    """The room's repository on the hub (``…/rooms/<slug>.git``) and a worker's token."""

    url: str
    token: str = field(repr=False)

    @property
    def config(self) -> tuple[tuple[str, str], ...]:
        credentials = base64.b64encode(f"worker:{self.token}".encode()).decode()
        return (("http.extraHeader", f"Authorization: Basic {credentials}"),)


def mirror_ready(path: Path) -> Path:
    """The copy at ``path``, made empty if it is not there yet: in a folder of its own,
    moved into place once whole (another process may be making it too)."""
    if (path / ".git").is_dir():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        git("init", "--quiet", f"--initial-branch={_NO_BRANCH}", str(partial), cwd=partial)
        with contextlib.suppress(OSError):  # made meanwhile by another process: that one stands
            partial.rename(path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return path


def mirror_tips(path: Path, remote: HubRemote, branches: tuple[str, ...]) -> dict[str, str]:
    """What each of ``branches`` names on the remote, by branch; one it lacks is left out."""
    wanted = [f"refs/heads/{branch}" for branch in branches]
    listed = _over_the_wire("ls-remote", remote.url, *wanted, path=path, remote=remote)
    tips = {}
    for line in listed.splitlines():
        sha, _, ref = line.partition("\t")
        if ref in wanted:
            tips[ref.removeprefix("refs/heads/")] = sha
    return tips


def mirror_fetch(path: Path, remote: HubRemote, tips: dict[str, str], *, into: str = "refs/heads/") -> None:
    """Each branch of ``tips`` made here what the remote has (forced: the remote is the
    truth), as ``into`` + its name, under the copy's lock. None of them may be checked
    out in a worktree here."""
    here = git("for-each-ref", "--format=%(refname) %(objectname)", *(into + branch for branch in tips), cwd=path)
    have = dict(line.split(" ", 1) for line in here.splitlines() if line)
    tips = {branch: tip for branch, tip in tips.items() if have.get(into + branch) != tip}
    if not tips:
        return  # each is here as the remote has it: no fetch's round trips
    with room_repo_lock(path):
        _over_the_wire("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote.url,
                       *(f"+refs/heads/{branch}:{into}{branch}" for branch in tips), path=path, remote=remote)


def mirror_push(path: Path, remote: HubRemote, branch: str) -> None:
    """The branch as it is here, pushed to the remote (a fast-forward: the remote refuses
    anything else from a worker)."""
    _over_the_wire("push", "--quiet", "--no-verify", remote.url, f"refs/heads/{branch}:refs/heads/{branch}",
                   path=path, remote=remote)
