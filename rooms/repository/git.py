"""Running git: the one place the hub starts git, so every call gets the same hardened
environment and errors.

The hub runs git outside the sandbox on repositories whose content an agent or an
uploaded bundle controls: files, ``.gitattributes``, ``.gitmodules``, nested
repositories with configs of their own. Whatever git could be told to run from there
is turned off here, for this git and every git it starts (submodule probes inherit the
``GIT_CONFIG_*`` settings): no system or global config, no hooks, no fsmonitor, no
look into submodules, no external diff, text conversion, pager or editor, no ``ext::``
transport. Nothing else in the hub calls ``git``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

# Commits made by the hub itself (initial commits, intent files, merges).
HUB_IDENTITY = {
    "GIT_AUTHOR_NAME": "Atrium",
    "GIT_AUTHOR_EMAIL": "atrium@localhost",
    "GIT_COMMITTER_NAME": "Atrium",
    "GIT_COMMITTER_EMAIL": "atrium@localhost",
}


class GitError(RuntimeError):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.args_list = args
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} failed ({returncode}): {self.stderr}")


# Settings that win over every config file git reads, the repository's included.
HARDENED_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "ssh -oBatchMode=yes"),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("protocol.ext.allow", "never"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),  # no detached maintenance outliving the call
    ("maintenance.auto", "false"),
    ("safe.directory", "*"),  # worktrees belong to the sandbox user; the hub names each repository itself
)
# Variables of the hub's environment that would point git elsewhere or run something.
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH",
            "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_NAMESPACE",
            "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_PROXY_COMMAND",
            "GIT_CURL_VERBOSE")  # and GIT_TRACE*: traces would write a worker's token to the log


# The object folders of a push not yet accepted (git's quarantine), which a pre-receive
# check reads from; set only by `reading_quarantine`.
_QUARANTINE_VARIABLES = ("GIT_QUARANTINE_PATH", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_quarantine: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar("git_quarantine", default=())


@contextlib.contextmanager
def reading_quarantine(receive_pack_environment: dict[str, str]) -> Iterator[None]:
    """Within: every git started also reads the objects of the push under way, as
    receive-pack's environment for its pre-receive check names them."""
    token = _quarantine.set(tuple((name, receive_pack_environment[name]) for name in _QUARANTINE_VARIABLES
                                  if name in receive_pack_environment))
    try:
        yield
    finally:
        _quarantine.reset(token)


# What a git serving people over HTTP keeps of the hub's environment (``inherit=False``):
# it needs no secret of the hub's, so it is given none.
_KEPT = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")


def hardened_env(extra_config: tuple[tuple[str, str], ...] = (), *, inherit: bool = True) -> dict[str, str]:
    """The environment every git the hub starts runs with; ``extra_config`` comes after
    the hardened settings, so a setting named there wins (the git remote's own hook
    folder, in place of none). ``inherit=False``: of the hub's own environment, only
    ``_KEPT``."""
    env = {name: value for name, value in os.environ.items()
           if name not in _DROPPED and not name.startswith(("GIT_CONFIG_", "GIT_TRACE")) and (inherit or name in _KEPT)}
    env.update(HUB_IDENTITY)
    env.update({
        "GIT_TERMINAL_PROMPT": "0",  # never hang waiting for credentials
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "false",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "LC_ALL": "C.UTF-8",  # git's messages in one language: the hub reads some of them
        "GIT_CONFIG_COUNT": str(len(HARDENED_CONFIG) + len(extra_config)),
    })
    for index, (key, value) in enumerate(HARDENED_CONFIG + extra_config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def git(*args: str, cwd: Path | str, check: bool = True, timeout: float = 120, input: str | None = None,
        index_file: Path | None = None, config: tuple[tuple[str, str], ...] = (),
        max_file_bytes: int | None = None) -> str:
    """Run ``git args`` in ``cwd`` (``input`` on its stdin, ``index_file`` a scratch index
    of the hub's own instead of the checkout's) and return its stdout; raise GitError on
    failure. ``config``: settings of this git alone, after the hardened ones (in its
    environment, never on its command line). ``max_file_bytes``: no file git writes (a
    fetched pack) may grow past it (RLIMIT_FSIZE: git is stopped, and fails).

    git runs in a process group of its own: past ``timeout`` the whole group is killed
    (a clone's ``index-pack`` too), not git alone, and the caller gets a GitError."""
    return _run(args, cwd=cwd, check=check, timeout=timeout, input=input, index_file=index_file, text=True,
                config=config, max_file_bytes=max_file_bytes)


def git_bytes(*args: str, cwd: Path | str, timeout: float = 120) -> bytes:
    """``git``'s stdout as the bytes git wrote (a patch to download, whatever its files hold)."""
    return _run(args, cwd=cwd, check=True, timeout=timeout, input=None, index_file=None, text=False)


def _run(args: tuple[str, ...], *, cwd: Path | str, check: bool, timeout: float, input: str | None,
         index_file: Path | None, text: bool, config: tuple[tuple[str, str], ...] = (),
         max_file_bytes: int | None = None):
    with _started(args, cwd, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                  stderr=subprocess.PIPE, index_file=index_file, text=text, config=config,
                  max_file_bytes=max_file_bytes) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except BaseException as exc:
            _kill(process)
            process.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):  # a huge or hostile repository
                raise _took_too_long(args, timeout) from None
            raise
    if check and process.returncode != 0:
        raise GitError(list(args), process.returncode, stderr if text else stderr.decode("utf-8", "replace"))
    return stdout


def git_records(*args: str, cwd: Path | str, timeout: float = 120) -> Iterator[str]:
    """The NUL-terminated records git writes (``-z`` output), read as it writes them: a
    caller that has seen enough stops (close the iterator, or let it go) and git is
    stopped, rather than its whole output held in memory first. Paths git writes as raw
    bytes come back with undecodable bytes escaped (``surrogateescape``)."""
    with tempfile.TemporaryFile() as errors, _started(args, cwd, stdin=subprocess.DEVNULL, stderr=errors,
                                                     text=False) as process:
        expired = threading.Event()

        def expire() -> None:
            if process.poll() is None:  # not one that ended just as its time ran out
                expired.set()
                _kill(process)

        timer = threading.Timer(timeout, expire)
        timer.start()
        read_all = False
        try:
            pending = b""
            while chunk := process.stdout.read1(1 << 16):
                *records, pending = (pending + chunk).split(b"\0")
                for record in records:
                    yield record.decode("utf-8", "surrogateescape")
            if pending:
                yield pending.decode("utf-8", "surrogateescape")
            read_all = True
        finally:
            if not read_all:  # the caller stopped early: git goes too
                _kill(process)
            process.wait()
            timer.cancel()
        if expired.is_set():
            raise _took_too_long(args, timeout)
        if process.returncode != 0:
            errors.seek(0)
            raise GitError(list(args), process.returncode, errors.read().decode("utf-8", "replace"))


def _started(args: tuple[str, ...], cwd: Path | str, *, stdin, stderr, text: bool = True,
             index_file: Path | None = None, config: tuple[tuple[str, str], ...] = (),
             max_file_bytes: int | None = None) -> subprocess.Popen:
    env = hardened_env(config) | dict(_quarantine.get())
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    # UTF-8 whatever the locale. What is not (a binary file in a diff, a path's raw bytes)
    # reads as U+FFFD: the text is shown and stored, and a lone surrogate could be neither.
    encoding = {"encoding": "utf-8", "errors": "replace"} if text else {}
    limit = ["prlimit", f"--fsize={max_file_bytes}", "--"] if max_file_bytes else []
    return subprocess.Popen([*limit, "git", "--no-pager", *args], cwd=cwd, env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=stderr, start_new_session=True, **encoding)


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _took_too_long(args: tuple[str, ...], timeout: float) -> GitError:
    return GitError(list(args), -1, f"git {args[0] if args else ''} took longer than {timeout:g} seconds")
