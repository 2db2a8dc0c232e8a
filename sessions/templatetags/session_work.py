"""Template helpers for the work region of the room page and the session page."""

from __future__ import annotations

import difflib
import json
import re

from django import template
from django.core.exceptions import ObjectDoesNotExist
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

from rooms.selectors import RoomAccess, room_agents
from sessions.event_lines import log_line
from sessions.events import event_frame
from sessions.forms import TaskForm
from sessions.models import Session, SessionEvent
from sessions.selectors import TaskWork, room_work

register = template.Library()
CLIENT_IDLE_SECONDS = 300


@register.simple_tag
def room_tasks(access: RoomAccess) -> dict:
    """The room's tasks with their sessions, and the agents a task can be started with.

    A tag rather than view context because the room page (hub.pages) and the work
    partial (sessions.views.tasks) both render the region.
    """
    work: list[TaskWork] = room_work(access.room)
    return {"tasks": work, "agents": [ra.agent for ra in room_agents(access.room)]}


@register.simple_tag
def room_totals(room) -> dict:
    """The room's totals panel (agents/_room_totals.html), for the room page."""
    from sessions.views.analysis import room_totals_of

    return room_totals_of(room)


@register.simple_tag
def new_task_form() -> TaskForm:
    return TaskForm()


@register.filter
def event_line(event: SessionEvent) -> str:
    """The log line of a stored event, the same HTML the session websocket sends."""
    return log_line(event_frame(event))


@register.filter
def rate(value) -> str:
    """A price per million tokens without trailing zeros: 3, 0.3, 0.075."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


CHANGE_LINES_SHOWN = 200


@register.filter
def proposed_change(approval) -> dict | None:
    """What an edit or a write would change, for its approval card: the path and the
    lines of a diff as (kind, text), kind "del", "add", "hunk" or "same"; None for any
    other call (the card shows its arguments). From the call's own arguments, never the
    worktree: the web process reads no room's files."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    path = arguments.get("path")
    if approval.tool == "edit_file" and all(isinstance(arguments.get(k), str) for k in ("path", "old", "new")):
        diff = difflib.unified_diff(arguments["old"].splitlines(), arguments["new"].splitlines(), lineterm="", n=3)
        lines = [(_diff_kind(line), line) for line in list(diff)[2:]]  # past the ---/+++ header
        how = "every occurrence of the old text" if arguments.get("replace_all") else "the old text, once"
    elif approval.tool == "write_file" and isinstance(path, str) and isinstance(arguments.get("content"), str):
        lines = [("add", "+" + line) for line in arguments["content"].splitlines()]
        how = "the whole file"
    else:
        return None
    return {"path": path, "how": how, "lines": lines[:CHANGE_LINES_SHOWN],
            "more": max(0, len(lines) - CHANGE_LINES_SHOWN)}


def _diff_kind(line: str) -> str:
    return {"-": "del", "+": "add", "@": "hunk"}.get(line[:1], "same")


# A Markdown code span: a fence of backticks, the code, the same fence (sessions.runtime.approvals.code).
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def _spans(text: str):
    """(is code, part) for each part of ``text``, the code without its fence and padding."""
    at = 0
    for found in CODE_SPAN.finditer(text):
        yield False, text[at:found.start()]
        inner = found.group(2)
        yield True, inner[1:-1] if len(inner) > 2 and inner.startswith(" ") and inner.endswith(" ") else inner
        at = found.end()
    yield False, text[at:]


@register.filter
def code_spans(text: str) -> str:
    """A rule's description with its code spans as <code>, every part escaped."""
    return mark_safe("".join(f"<code>{escape(part)}</code>" if is_code else escape(part)  # noqa: S308 - each part escaped
                             for is_code, part in _spans(str(text))))


@register.filter
def without_fences(text: str) -> str:
    """A rule's description as plain text (a tooltip): its code spans unfenced."""
    return "".join(part for _, part in _spans(str(text)))


@register.filter
def session_duration(session: Session) -> str:
    """How long the session has run: start to finish, or to now while it runs (to its
    last request, for a gateway conversation whose client went quiet)."""
    if session.started_at is None:
        return "not started"
    end = session.finished_at or client_idle(session) or timezone.now()
    return human_seconds((end - session.started_at).total_seconds())


@register.filter
def client_idle(session: Session):
    """When the client of a running gateway conversation last called, if that is longer
    ago than CLIENT_IDLE_SECONDS: nothing runs it until the client calls again (no
    worker does, and no time limit ends it), so "Running" alone would mislead."""
    if session.origin != Session.Origin.ENDPOINT or session.state != Session.State.RUNNING:
        return None
    try:
        last = session.gateway_conversation.updated_at
    except ObjectDoesNotExist:
        return None
    return last if (timezone.now() - last).total_seconds() > CLIENT_IDLE_SECONDS else None


def human_seconds(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"
