"""The git remote's views (async under Daphne, thin) and the profile page where people
make and revoke their access tokens.

A git request authenticates with HTTP basic and a token (never a session cookie: no
CSRF to guard, nothing a page could send for you); without one it gets the 401 that
makes git ask for credentials. A room the person is not in answers as a missing one.
A push holds the room lock while git receives it, so it takes its turn with merges and
intent commits; it runs to its end whatever its client does, and the room hears what
moved. After a push, and after a fetch is served, the repository is repacked in the
background when it needs it (``rooms.repository.maintenance``): clones stay quick.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from remote import smart_http, worker_steps
from remote.pushes import Access, repository_access, tell_room, worker_refusal, worker_still_holds
from remote.tokens import (
    NAME_MAX_LENGTH,
    access_token_create,
    access_token_revoke,
    access_tokens_of,
    basic_token,
)
from rooms.errors import RoomError, attempt
from rooms.repository.git import GitError
from rooms.repository.lock import LockBusy, room_repo_lock_async
from rooms.repository.maintenance import repository_repack_soon
from rooms.repository.worktrees import WorktreeError
from rooms.worker_tokens import worker_token_read

logger = logging.getLogger(__name__)


# Pushes under way: each its own task, which a client that goes away does not cancel.
_pushes: set[asyncio.Task] = set()
PUSH_LOCK_WAIT_SECONDS = 120  # behind a merge or another push; then a 503 to try again


@csrf_exempt
@login_not_required
async def git_http(request: HttpRequest, slug: str, path: str) -> HttpResponse:
    query = request.META.get("QUERY_STRING", "")
    service = smart_http.service_of(path, query)
    if service is None or request.method != ("GET" if path == "info/refs" else "POST"):
        return _plain(404, "Not a git smart-HTTP request.")
    access: Access = await sync_to_async(repository_access)(
        basic_token(request.headers.get("Authorization")), slug, push=service == smart_http.RECEIVE)
    if access.refusal:
        response = _plain(access.status, access.refusal)
        if access.status == 401:
            response["WWW-Authenticate"] = 'Basic realm="Atrium", charset="UTF-8"'
        return response
    try:
        git_request, commands = _git_request(request, path, query, access)
        push = _push_rules(access) if service == smart_http.RECEIVE else None
    except smart_http.Refused as exc:
        return _plain(exc.status, str(exc))
    except smart_http.HookUnusable:
        logger.exception("pushes refused: the pre-receive check cannot run")
        return _plain(503, "This hub cannot check pushes right now; its operator has been told.")
    git_dir = access.repo / ".git"
    if path == smart_http.RECEIVE:
        task = asyncio.create_task(_push(git_dir, git_request, push, access, commands))
        _pushes.add(task)
        task.add_done_callback(_pushes.discard)
        return await asyncio.shield(task)
    answer = await smart_http.serve(git_dir, git_request, push=push)
    if path == smart_http.UPLOAD:  # a fetch: what it cost the next one may be saved
        answer.body = _then(answer.body, lambda: repository_repack_soon(access.repo))
    return _streamed(answer)


@csrf_exempt
@login_not_required
@require_POST
async def worker_step(request: HttpRequest, slug: str, step: str) -> HttpResponse:
    """A step a worker on another machine asks of its session's room repository
    (``remote.worker_steps``), with the token that lets it push the session's branch."""
    token = basic_token(request.headers.get("Authorization"))
    if worker_token_read(token) is None:
        return _plain(401, "Only a worker running a session asks this of the hub.")
    access: Access = await sync_to_async(repository_access)(token, slug, push=True)
    if access.refusal:
        return _plain(access.status, access.refusal)
    try:
        said = json.loads(request.body or b"{}")
    except ValueError:
        return _plain(400, "The body is not JSON.")
    try:
        answer = await sync_to_async(worker_steps.worker_step, thread_sensitive=False)(
            access.room, access.worker.session_id, step, said)
    except worker_steps.StepRefused as exc:
        return _plain(400, str(exc))
    except (GitError, WorktreeError) as exc:
        logger.warning("a worker's %s of session %s failed: %s", step, access.worker.session_id, exc)
        return _plain(409, f"The room's repository could not {step}: {exc}")
    return JsonResponse(answer)


def _git_request(request: HttpRequest, path: str, query: str, access: Access) \
        -> tuple[smart_http.GitRequest, list[str]]:
    """The request as git will read it, bounded first (``smart_http``), and a push's
    commands."""
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    body, prefix, commands = io.BytesIO(b""), b"", []
    if path == smart_http.UPLOAD:
        body = io.BytesIO(smart_http.plain_body(request.read(), encoding))
    elif path == smart_http.RECEIVE:
        if encoding not in ("", "identity"):
            raise smart_http.Refused("git sends pushes uncompressed; this one was not.", 415)
        prefix = request.read(smart_http.COMMANDS_MAX_BYTES + 4)
        commands = smart_http.push_commands(prefix)
        body = request
    return smart_http.GitRequest(
        method=request.method, path=path, query=query, content_type=request.content_type or "",
        git_protocol=request.headers.get("Git-Protocol", ""), remote_user=access.who,
        body=body, prefix=prefix), commands


async def _push(git_dir: Path, git_request: smart_http.GitRequest, push: smart_http.Push, access: Access,
                commands: list[str]) -> HttpResponse:
    """receive-pack under the room lock, to its end, and the room told what moved."""
    try:
        async with room_repo_lock_async(access.repo, wait_seconds=PUSH_LOCK_WAIT_SECONDS):
            if access.worker is not None and not await sync_to_async(worker_still_holds)(access.worker):
                return _plain(401, worker_refusal(access.worker))  # its lease moved while it waited
            answer = await smart_http.receive(git_dir, git_request, push)
            try:
                await sync_to_async(tell_room, thread_sensitive=False)(access, commands)
            except Exception:  # the push landed: its client hears so whatever the room's message did
                logger.exception("the room was not told of a push")
    except LockBusy:
        return _plain(503, "The room's repository stayed busy (merges or other pushes); try again.")
    except TimeoutError:
        return _plain(504, "The push took too long and was stopped; nothing of it is kept.")
    repository_repack_soon(access.repo)  # the lock is free again
    response = HttpResponse(answer.body, status=answer.status)
    for name, value in answer.headers:
        response[name] = value
    return response


def _push_rules(access: Access) -> smart_http.Push:
    return smart_http.Push(
        main=access.room.default_branch, max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
        max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES, max_pack_bytes=settings.ATRIUM_UPLOAD_MAX_BYTES,
        hooks=smart_http.push_hooks(settings.DATA_DIR / "git-hooks"), only_ref=access.only_ref)


async def _then(body: AsyncGenerator[bytes, None], after: Callable[[], None]) -> AsyncIterator[bytes]:
    """``body``, then ``after()`` once all of it went out (not when its client went away)."""
    async with contextlib.aclosing(body):
        async for chunk in body:
            yield chunk
    after()


def _streamed(answer: smart_http.GitResponse) -> StreamingHttpResponse:
    response = StreamingHttpResponse(answer.body, status=answer.status)
    for name, value in answer.headers:
        response[name] = value
    return response


def _plain(status: int, text: str) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain; charset=utf-8")


# --- the profile page: access tokens ------------------------------------------------------------


class AccessTokenForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, help_text="Where it will be used, e.g. “laptop”.")


@require_GET
def profile(request: HttpRequest) -> HttpResponse:
    return _profile(request)


@require_POST
def token_new(request: HttpRequest) -> HttpResponse:
    form = AccessTokenForm(request.POST)
    made = None
    if form.is_valid():
        try:
            made = access_token_create(user=request.user, name=form.cleaned_data["name"])
        except RoomError as exc:
            form.add_error(None, exc.message)
        else:
            form = AccessTokenForm()
    return _profile(request, token_form=form, new_token=made.text if made else None, status=400 if form.errors else 200)


@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    error = attempt(access_token_revoke, user=request.user, token_id=token_id)
    return _profile(request, tokens_error=error, tokens_notice=None if error else "Token revoked.",
                    status=400 if error else 200)


def _profile(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"tokens": list(access_tokens_of(request.user)), "token_form": AccessTokenForm(),
               "hub_url": request.build_absolute_uri("/").rstrip("/"), **extra}
    return render(request, "remote/profile.html", context, status=status)
