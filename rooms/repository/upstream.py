"""A room's upstream: the repository the team's code lives in (on a forge, over HTTPS or
SSH), fetched before a session starts and pushed to after the hub merges.

Over HTTPS its token reaches git only as an ``Authorization`` header in git's
environment (``GIT_CONFIG_*``: not on a command line, not in the repository's config),
for this one git and the one URL; over SSH, the room's deploy key reaches only the one
``ssh`` git starts (rooms/repository/ssh.py), which meets only the host keys recorded
when the room was linked. git follows no redirect, speaks no other protocol, and what
git says is scrubbed of the token before anyone reads it. Hosts are the operator's to
allow (``ATRIUM_UPSTREAM_HOSTS``): ``github.com`` allows HTTPS and SSH (port 22) there,
``http://host:port`` that exact plain-HTTP origin (a forge inside the network),
``ssh://host:port`` SSH on that port.

What a fetch brings is held to what an import is (no submodule, no nested ``.git``, no
checkout past the bounds, ``.atrium/`` as main has it) before main moves, and main only
moves forward. Plain Python: paths and settings come in as arguments.
"""

from __future__ import annotations

import base64
import contextlib
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from rooms.repository.activity import is_ancestor
from rooms.repository.git import GitError, git
from rooms.repository.hub_files import HUB_OWNED
from rooms.repository.lock import room_repo_lock
from rooms.repository.pushes import content_refusal
from rooms.repository.ssh import SshAddress, ssh_address, ssh_command
from rooms.repository.worktrees import advance_main, worktree_merge

FETCHED = "refs/atrium/upstream"
UP_TO_DATE = "up to date with the upstream"  # where the upstream's branch waits for its checks
TIMEOUT_SECONDS = 300


class UpstreamError(RuntimeError):
    """The upstream could not be reached, refused, or sent what the room does not take;
    the message says which, without the token."""


@dataclass(frozen=True, slots=True)
class Upstream:
    url: str
    branch: str
    token: str = field(default="", repr=False)  # HTTPS: for git and the forge; SSH: for the forge alone
    max_bytes: int = 200 * 1024 * 1024  # no file git writes for it (a pack) grows past this
    deploy_key: str = field(default="", repr=False)  # SSH: the room's private key (OpenSSH format)
    known_hosts: str = ""  # SSH: the host's keys, as scanned when the room was linked

    @property
    def ssh(self) -> SshAddress | None:
        return ssh_address(self.url)

    @property
    def host(self) -> str:
        return self.ssh.host if self.ssh else urlsplit(self.url).netloc

    def scrub(self, text: str) -> str:
        if self.token:
            text = text.replace(self.token, "[token]").replace(_basic(self.token), "[token]")
        return text


def check_upstream_url(url: str, allowed: list[str]) -> str:
    """``url`` if it names a repository on a host the operator allows; ValueError saying
    what to change otherwise."""
    url = url.strip()
    if (address := ssh_address(url)) is not None:
        if not any(entry == address.origin if "://" in entry else address.port == 22 and address.host == entry
                   for entry in allowed):
            raise ValueError(f"{address.host} (SSH, port {address.port}) is not a host this hub may reach "
                             f"(its operator allows: {', '.join(allowed) or 'none'}).")
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("An upstream is an https:// or SSH URL of a repository (e.g. https://github.com/org/repo.git "
                         "or git@github.com:org/repo.git).")
    if parts.username or parts.password:
        raise ValueError("Put no credentials in the URL: give the token in its own field.")
    if parts.query or parts.fragment or parts.path.strip("/") == "":
        raise ValueError("The URL names a repository: https://host/owner/name(.git), no query.")
    origin = f"{parts.scheme}://{parts.netloc}"
    if not any(entry == origin if "://" in entry else parts.scheme == "https" and parts.netloc == entry
               for entry in allowed):
        hosts = ", ".join(allowed) or "none"
        raise ValueError(f"{parts.netloc} is not a host this hub may reach (its operator allows: {hosts}).")
    return url


def check_branch_name(name: str) -> bool:
    """Whether git takes ``name`` as a branch's (``check-ref-format --branch``), and it
    cannot be read as an option."""
    if not name or name.startswith("-"):
        return False
    return git("check-ref-format", "--branch", name, cwd=Path.cwd(), check=False).strip() == name


def _basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


@contextlib.contextmanager
def _transport(upstream: Upstream) -> Iterator[tuple[tuple[str, str], ...]]:
    """The settings of one git that talks to the upstream, and nothing else."""
    config = [("protocol.allow", "never"), ("http.followRedirects", "false"), ("credential.helper", ""),
              ("transfer.fsckObjects", "true"), ("transfer.bundleURI", "false")]
    if upstream.ssh is not None:
        with ssh_command(upstream.deploy_key, upstream.known_hosts, TIMEOUT_SECONDS) as command:
            yield (*config, ("protocol.ssh.allow", "always"), ("core.sshCommand", command))
        return
    config.append((f"protocol.{urlsplit(upstream.url).scheme}.allow", "always"))
    if upstream.token:
        config.append(("http.extraHeader", f"Authorization: Basic {_basic(upstream.token)}"))
    yield tuple(config)


def _git(upstream: Upstream, *args: str, cwd: Path) -> str:
    try:
        with _transport(upstream) as config:
            return git(*args, cwd=cwd, timeout=TIMEOUT_SECONDS, config=config, max_file_bytes=upstream.max_bytes)
    except GitError as exc:
        raise UpstreamError(upstream.scrub(_refusal(upstream, exc.stderr or str(exc)))) from None


def _refusal(upstream: Upstream, said: str) -> str:
    if "could not read Username" in said or "Authentication failed" in said:
        return f"{upstream.host} refused the token (it needs to read, and push to, {upstream.url})"
    if "Permission denied (publickey" in said:
        return (f"{upstream.host} refused the room's deploy key: add its public half to the repository as a "
                "deploy key with write access")
    if "Host key verification failed" in said or "REMOTE HOST IDENTIFICATION HAS CHANGED" in said:
        return (f"{upstream.host} did not show the host key recorded when the room was linked (if the forge "
                "changed its key, an administrator scans it again in the admin panel)")
    return said


def clone(upstream: Upstream, workdir: Path) -> None:
    """The upstream's branch, fetched into a new repository at ``workdir`` (no checkout:
    the caller checks what came, then checks it out)."""
    git("init", "--quiet", "--initial-branch", upstream.branch, cwd=workdir)
    _git(upstream, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--update-head-ok", "--", upstream.url,
         f"+refs/heads/{upstream.branch}:refs/heads/{upstream.branch}", cwd=workdir)


def fetch_into_main(repo: Path, upstream: Upstream, *, main: str, max_checkout_bytes: int,
                    max_checkout_files: int) -> str:
    """Fetch the upstream's branch and bring it into main: a fast-forward where main has
    nothing of its own, else a merge (the hub's intent commits, merged sessions not yet
    pushed back), computed before main moves and left undone on a conflict. What
    happened, in a sentence; UpstreamError when the upstream cannot be read or what it
    holds is refused. Takes the room lock only to move main. The commit checked is the
    commit merged: each call fetches to a ref of its own, removed after."""
    with _fetched(repo, upstream) as fetched:
        main_tip = git("rev-parse", "--verify", f"refs/heads/{main}^{{commit}}", cwd=repo).strip()
        if fetched == main_tip or is_ancestor(repo, fetched, main_tip):
            return UP_TO_DATE
        if not git("merge-base", main_tip, fetched, cwd=repo, check=False).strip():
            return _first_fetch(repo, upstream, fetched, main=main, main_tip=main_tip,
                                bounds=(max_checkout_bytes, max_checkout_files))
        if reason := content_refusal(repo, fetched, shown=f"the upstream's {upstream.branch}", main_tip=main_tip,
                                     bounds=(max_checkout_bytes, max_checkout_files)):
            raise UpstreamError(reason)
        count = git("rev-list", "--count", f"{main_tip}..{fetched}", cwd=repo).strip()
        if is_ancestor(repo, main_tip, fetched):
            with room_repo_lock(repo):
                if git("rev-parse", f"refs/heads/{main}", cwd=repo).strip() == main_tip:
                    advance_main(repo, main_tip, fetched, main)
                    return f"{main} moved forward to the upstream's {upstream.branch} ({count} commits, {fetched[:10]})"
        merged = worktree_merge(repo=repo, branch=fetched, message=f"Merge the upstream's {upstream.branch}",
                                target=main, max_checkout_bytes=max_checkout_bytes,
                                max_checkout_files=max_checkout_files)
    if merged.status == "conflict":
        return (f"the upstream's {upstream.branch} does not merge into {main} cleanly "
                f"({', '.join(merged.conflicts) or merged.detail}): {main} stays as it is")
    return f"{main} took in the upstream's {upstream.branch} ({count} commits, merged as {merged.main_after[:10]})"


def _first_fetch(repo: Path, upstream: Upstream, fetched: str, *, main: str, main_tip: str,
                 bounds: tuple[int, int]) -> str:
    """A room linked before its upstream could be read (over SSH, its deploy key not yet
    on the forge) holds nothing but the hub's own files: main takes the upstream's files,
    keeping the room's ``.atrium/`` (the upstream's is not the hub's), in a commit whose
    parents are both histories. Any other main with no history in common is refused."""
    if git("ls-tree", "--name-only", main_tip, cwd=repo).split() not in ([], [HUB_OWNED]):
        raise UpstreamError(f"the upstream's {upstream.branch} shares no history with {main}")
    if reason := content_refusal(repo, fetched, shown=f"the upstream's {upstream.branch}", main_tip="",
                                 bounds=bounds):
        raise UpstreamError(reason)
    tree = _with_hub_files_of(repo, fetched, main_tip)
    joined = git("commit-tree", tree, "-p", main_tip, "-p", fetched, "-m", f"The upstream's {upstream.branch}",
                 cwd=repo).strip()
    with room_repo_lock(repo):
        if git("rev-parse", f"refs/heads/{main}", cwd=repo).strip() != main_tip:
            raise UpstreamError(f"{main} moved while the upstream was read; it is read again next time")
        advance_main(repo, main_tip, joined, main)
    return f"{main} now holds the upstream's {upstream.branch} ({fetched[:10]})"


@contextlib.contextmanager
def _fetched(repo: Path, upstream: Upstream) -> Iterator[str]:
    """The upstream branch's tip, fetched to a ref of this call's own, which goes after
    (a refused tip stays nowhere a person or a session could reach it by name)."""
    ref = f"{FETCHED}/{uuid.uuid4().hex}"
    try:
        _git(upstream, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--", upstream.url,
             f"+refs/heads/{upstream.branch}:{ref}", cwd=repo)
        yield git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=repo).strip()
    finally:
        git("update-ref", "-d", ref, cwd=repo, check=False)


def export_commit(repo: Path, upstream: Upstream, branch: str) -> str:
    """What of ``branch`` goes to the upstream: its change (since it shares history with
    the upstream's branch) on the upstream's newest tip, without the hub's own files (the
    tasks' intent files are people's words, not the team's code): a commit of the hub's
    whose parent is that tip, so pushing it is a fast-forward. UpstreamError when the
    two do not merge."""
    with _fetched(repo, upstream) as tip:
        merged = git("merge-tree", "--write-tree", "--name-only", "-z", tip, f"refs/heads/{branch}", cwd=repo,
                     check=False)
        tree, _, conflicts = merged.partition("\0")
        if conflicts.strip("\0") or not tree.strip():
            raise UpstreamError(f"{branch} does not merge into the upstream's {upstream.branch} cleanly")
        exported = _with_hub_files_of(repo, tree.strip(), tip)  # the upstream's own .atrium/, kept as it is
        subject = git("log", "-1", "--format=%s", f"refs/heads/{branch}", cwd=repo).strip()
        return git("-c", "commit.gpgsign=false", "commit-tree", exported, "-p", tip, "-m", subject,
                   cwd=repo).strip()


def _with_hub_files_of(repo: Path, tree: str, other: str) -> str:
    """``tree`` with the ``.atrium/`` folder of commit ``other`` in place of its own (none
    where ``other`` has none): a tree written to the repository, by id."""
    with tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch) / "index"
        git("read-tree", tree, cwd=repo, index_file=index)
        git("rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", HUB_OWNED, cwd=repo, index_file=index)
        if git("ls-tree", other, "--", HUB_OWNED, cwd=repo).strip():
            git("read-tree", f"--prefix={HUB_OWNED}/", f"{other}:{HUB_OWNED}", cwd=repo, index_file=index)
        return git("write-tree", cwd=repo, index_file=index).strip()


def push(repo: Path, upstream: Upstream, local: str, remote_branch: str, *, force: bool = False) -> str:
    """Push ``local`` (a ref or a commit) to the upstream's ``remote_branch``: a
    fast-forward only, unless ``force`` (a session's own branch, made anew each time)."""
    _git(upstream, "push", "--quiet", "--no-verify", "--porcelain", "--", upstream.url,
         f"{'+' if force else ''}{local}:refs/heads/{remote_branch}", cwd=repo)
    return f"pushed to the upstream's {remote_branch}"
