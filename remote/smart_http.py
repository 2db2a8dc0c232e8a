"""git's smart HTTP protocol, served by git's own ``http-backend`` (a CGI program) for one
room repository. Plain Python and asyncio: no Django here.

Only the smart protocol's three paths are served (``info/refs``, ``git-upload-pack``,
``git-receive-pack``); git's dumb file paths never are. git runs with the hub's hardened
environment (``rooms.repository.git.hardened_env``), none of the hub's secrets in it: no
hook, filter or program the repository names runs.

A fetch streams: the request into git, git's answer back as the client takes it, and a
client that goes away stops git. A push does not depend on its client: once git has it,
git finishes it (``receive``) whatever happens to the connection, since a git killed
while it moves refs or main's checkout leaves lock files that stop the room's merges. A
push runs one hook, the hub's pre-receive check, from a folder of the hub's
(``push_hooks``); receive-pack updates main's checkout only when it is clean.

What a client sends is bounded before git reads it: a push's commands (``push_commands``;
git never compresses a push), a fetch's negotiation once decompressed (``plain_body``):
git itself inflates either without a limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import subprocess
import sys
import tempfile
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rooms.repository.git import hardened_env

logger = logging.getLogger(__name__)

UPLOAD, RECEIVE = "git-upload-pack", "git-receive-pack"
CHUNK = 1 << 16
HEADERS_MAX = 64 * 1024  # http-backend's CGI headers are a few lines
FETCH_BODY_MAX = 10 * 1024 * 1024  # a fetch's negotiation, decompressed (git's own cap, compressed)
COMMANDS_MAX_BYTES = 1024 * 1024  # a push's ref updates
COMMANDS_MAX = 1_000
FETCH_SECONDS = 3600  # a large clone over a slow link
PUSH_SECONDS = 600
STOP_GRACE_SECONDS = 10  # SIGTERM first: git removes its lock files
STDERR_KEPT = 8 * 1024

PRE_RECEIVE = """#!/bin/sh
# Written by Atrium: a person's push is checked by the hub (rooms/repository/pre_receive.py).
exec "$ATRIUM_HOOK_PYTHON" -P -m rooms.repository.pre_receive
"""


class Refused(ValueError):
    """The request is not one git's remote takes; the message says why (a 4xx)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class HookUnusable(RuntimeError):
    """The hub's pre-receive check cannot run here: no push may go unchecked."""


def service_of(path: str, query: str) -> str | None:
    """The git service a smart-protocol request asks for (upload: fetch and clone;
    receive: push), or None for anything else, an ambiguous query included."""
    if path == "info/refs":
        asked = [value for name, _, value in (part.partition("=") for part in query.split("&")) if name == "service"]
        return asked[0] if len(asked) == 1 and asked[0] in (UPLOAD, RECEIVE) else None
    return path if path in (UPLOAD, RECEIVE) else None


def push_commands(body: bytes) -> list[str]:
    """A push's ref updates (``old new ref`` each) from the start of its body: pkt-lines
    up to the first flush. Refused past COMMANDS_MAX of them or
    COMMANDS_MAX_BYTES, or when the body does not start as a push does."""
    commands, position = [], 0
    while True:
        if position + 4 > len(body):
            raise Refused(f"A push names at most {COMMANDS_MAX:,} refs (or its request is cut short).", 413)
        try:
            length = int(body[position:position + 4], 16)
        except ValueError:
            raise Refused("Not a git push.") from None
        if length == 0:
            return commands
        if length < 4:
            raise Refused("Not a git push.")
        line = body[position + 4:position + length].split(b"\0", 1)[0].rstrip(b"\n").decode("utf-8", "replace")
        position += length
        if not line.startswith("shallow "):
            commands.append(line)
        if len(commands) > COMMANDS_MAX:
            raise Refused(f"A push names at most {COMMANDS_MAX:,} refs.", 413)


def plain_body(data: bytes, encoding: str) -> bytes:
    """A fetch's request body as git reads it, inflated here with a limit."""
    if encoding in ("", "identity"):
        return data
    if encoding not in ("gzip", "x-gzip"):
        raise Refused(f"Content-Encoding {encoding} is not taken.", 415)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(data, FETCH_BODY_MAX + 1)
    except zlib.error:
        raise Refused("The request body is not valid gzip.") from None
    if len(plain) > FETCH_BODY_MAX or inflater.unconsumed_tail:
        raise Refused(f"A fetch's request is at most {FETCH_BODY_MAX >> 20} MB.", 413)
    return plain


@dataclass(frozen=True, slots=True)
class Push:
    """What a push is held to: the room's main branch and checkout bounds, the largest
    pack it may send, the hub's hook folder (``push_hooks``)."""

    main: str
    max_checkout_bytes: int
    max_checkout_files: int
    max_pack_bytes: int
    hooks: Path
    only_ref: str = ""  # a worker's push: its session's branch alone (rooms.worker_tokens)


@dataclass(frozen=True, slots=True)
class GitRequest:
    method: str
    path: str
    query: str
    content_type: str
    git_protocol: str  # the Git-Protocol header: "version=2" asks for protocol v2
    remote_user: str
    body: BinaryIO  # what git reads after ``prefix``
    prefix: bytes = b""


@dataclass
class GitResponse:
    status: int
    headers: list[tuple[str, str]]
    body: AsyncIterator[bytes] | bytes


_hooks_checked: set[Path] = set()


def push_hooks(folder: Path) -> Path:
    """The hub's hook folder for pushes: written once per process (a unique name renamed
    into place), then checked to be exactly ours and runnable; HookUnusable otherwise (a
    data folder mounted ``noexec``: git would skip the hook and take the push unchecked)."""
    hook = folder / "pre-receive"
    if folder not in _hooks_checked:
        folder.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=folder, prefix=".pre-receive.")
        with os.fdopen(handle, "w") as written:
            written.write(PRE_RECEIVE)
        os.chmod(partial, 0o755)
        os.replace(partial, hook)
    try:
        usable = hook.read_text() == PRE_RECEIVE and os.access(hook, os.X_OK)
    except OSError:
        usable = False
    if not usable:
        _hooks_checked.discard(folder)
        raise HookUnusable(f"{hook} cannot be run (is the data folder mounted noexec?)")
    _hooks_checked.add(folder)
    return folder


def _environment(git_dir: Path, request: GitRequest, push: Push | None) -> dict[str, str]:
    config = [("http.getanyfile", "false"), ("http.uploadpack", "true"),
              ("http.receivepack", "true" if push else "false"), ("uploadpack.allowFilter", "true")]
    if push is not None:
        config += [("core.hooksPath", str(push.hooks)), ("receive.denyCurrentBranch", "updateInstead"),
                   ("receive.fsckObjects", "true"), ("receive.maxInputSize", str(push.max_pack_bytes)),
                   ("receive.shallowUpdate", "false"), ("receive.advertisePushOptions", "false"),
                   ("receive.denyDeleteCurrent", "true")]
    env = hardened_env(tuple(config), inherit=False)
    if push is not None:
        env |= {"ATRIUM_PUSH_MAIN": push.main, "ATRIUM_PUSH_MAX_BYTES": str(push.max_checkout_bytes),
                "ATRIUM_PUSH_MAX_FILES": str(push.max_checkout_files), "ATRIUM_PUSH_ONLY_REF": push.only_ref,
                "ATRIUM_HOOK_PYTHON": sys.executable,
                "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env |= {
        "GIT_PROJECT_ROOT": str(git_dir),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": "/" + request.path,
        "REQUEST_METHOD": request.method,
        "QUERY_STRING": request.query,
        "CONTENT_TYPE": request.content_type,
        "REMOTE_USER": request.remote_user,
        "REMOTE_ADDR": "127.0.0.1",
    }
    if request.git_protocol:
        env["GIT_PROTOCOL"] = request.git_protocol
    return env


@functools.cache
def http_backend() -> tuple[str, ...]:
    """How http-backend is started: the program in git's exec path itself, a process
    less per request than ``git http-backend`` (which only starts it, ~1 ms), and the
    command git's own wrapper would have run. Asked of git once per process."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        exec_path = subprocess.run(["git", "--exec-path"], env=hardened_env(inherit=False), capture_output=True,
                                   text=True, timeout=30, check=True).stdout.strip()
        program = Path(exec_path) / "git-http-backend"
        if program.is_absolute() and os.access(program, os.X_OK):
            return (str(program),)
    return ("git", "http-backend")


async def _started(git_dir: Path, request: GitRequest, push: Push | None):
    process = await asyncio.create_subprocess_exec(
        *http_backend(), env=_environment(git_dir, request, push), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        limit=HEADERS_MAX)
    errors: list[bytes] = []
    feeding = asyncio.create_task(_feed(process, request))
    reading = asyncio.create_task(_stderr(process, errors))
    return process, (feeding, reading), errors


async def serve(git_dir: Path, request: GitRequest, *, push: Push | None = None) -> GitResponse:
    """A fetch (or a ref advertisement): git's answer streams as the client takes it; a
    client that goes away, or FETCH_SECONDS, stops git (its whole process group)."""
    process, helpers, errors = await _started(git_dir, request, push)
    try:
        status, headers = await asyncio.wait_for(_headers(process), FETCH_SECONDS)
    except BaseException:
        await _stop(process, helpers, errors)
        raise
    return GitResponse(status=status, headers=headers, body=_rest(process, helpers, errors))


async def receive(git_dir: Path, request: GitRequest, push: Push) -> GitResponse:
    """A push, run to its end and answered whole (receive-pack says little): past
    PUSH_SECONDS git is asked to stop, and killed only if it does not."""
    process, helpers, errors = await _started(git_dir, request, push)
    try:
        async with asyncio.timeout(PUSH_SECONDS):
            status, headers = await _headers(process)
            body = await process.stdout.read()
            await process.wait()
    finally:
        await _stop(process, helpers, errors, grace=STOP_GRACE_SECONDS)
    return GitResponse(status=status, headers=headers, body=body)


async def _feed(process: asyncio.subprocess.Process, request: GitRequest) -> None:
    try:
        if request.prefix:
            process.stdin.write(request.prefix)
            await process.stdin.drain()
        while chunk := request.body.read(CHUNK):
            process.stdin.write(chunk)
            await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # git answered without reading it all (a refusal)
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.close()


async def _stderr(process: asyncio.subprocess.Process, kept: list[bytes]) -> None:
    """git's stderr, its last STDERR_KEPT bytes kept for the log."""
    tail = b""
    while chunk := await process.stderr.read(CHUNK):
        tail = (tail + chunk)[-STDERR_KEPT:]
    kept.append(tail)


async def _headers(process: asyncio.subprocess.Process) -> tuple[int, list[tuple[str, str]]]:
    status, headers, ended = 200, [], False
    while line := await process.stdout.readline():
        line = line.rstrip(b"\r\n")
        if not line:
            ended = True
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        else:
            headers.append((name.strip(), value.strip()))
    if not ended:  # git ended before it said anything
        return 502, [("Content-Type", "text/plain; charset=utf-8")]
    return status, headers


async def _rest(process: asyncio.subprocess.Process, helpers, errors: list[bytes]) -> AsyncIterator[bytes]:
    deadline = asyncio.get_running_loop().time() + FETCH_SECONDS
    try:
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            chunk = await asyncio.wait_for(process.stdout.read(CHUNK), max(remaining, 0))
            if not chunk:
                break
            yield chunk
        await process.wait()
    finally:
        await _stop(process, helpers, errors)


async def _stop(process: asyncio.subprocess.Process, helpers, errors: list[bytes], *, grace: float = 0) -> None:
    if process.returncode is None and grace:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), grace)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    await process.wait()
    feeding, reading = helpers
    feeding.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await feeding
    await reading
    if process.returncode not in (0, -signal.SIGKILL) and errors and errors[0]:
        logger.warning("git http-backend exited %s: %s", process.returncode,
                       errors[0].decode("utf-8", "replace"))
