"""Tasks: created with their intent file (committed to the room's repository) and edited
mid-flight, the file written outside the row's transaction under the task's lock. The
file is rendered from the row (``task_intent``), which sessions read: a worker on any
machine reads it from the database, and a push never changes ``.atrium/``."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from agents.tools.beneath import PathRefused
from rooms.errors import RoomError
from rooms.models import Room
from rooms.repository.intent import intent_write, render_intent
from rooms.repository.lock import task_intent_lock
from rooms.selectors import check_may_act_in
from sessions.models import (
    Task,
)

TITLE_MAX = 200


def task_create(*, room: Room, actor: AbstractBaseUser, title: str, objective: str,
                definition_of_done: str = "", prerequisites: str = "", constraints: str = "") -> Task:
    """Create a task and commit its intent file to the room repository.

    Git runs after the row is committed, outside any transaction: a commit waits for the
    room's repository lock, which must never be held while row locks are (the intent's
    path needs the task's id, so the row comes first). If git fails the row is deleted
    again, so a failure leaves neither a task without intent nor an intent without task.
    """
    title, objective = title.strip(), objective.strip()
    if not title or not objective:
        raise RoomError("A task needs a title and an objective.", code="invalid")
    if len(title) > TITLE_MAX:
        raise RoomError(f"Keep the title under {TITLE_MAX} characters.", code="invalid")
    with transaction.atomic(durable=True):
        check_may_act_in(room, actor)
        task = Task.objects.create(room=room, title=title, objective=objective,
                                   definition_of_done=definition_of_done, prerequisites=prerequisites,
                                   constraints=constraints, created_by=actor)
    try:
        task_write_intent(task=task, author=actor.get_username())
    except BaseException:
        # Nobody has the task yet (it was not returned), so nothing started on it.
        Task.objects.filter(pk=task.pk).delete()
        raise
    return task


INTENT_FIELDS = ("title", "objective", "prerequisites", "definition_of_done", "constraints")


def task_intent(task: Task) -> str:
    """The text of ``task``'s intent file."""
    return render_intent(task_id=task.pk, **{name: getattr(task, name) for name in INTENT_FIELDS})


def task_intent_now(task_id: int) -> str | None:
    """The task's intent as its row says now (one statement), None once it is deleted."""
    task = Task.objects.filter(pk=task_id).only(*INTENT_FIELDS).first()
    return None if task is None else task_intent(task)


def task_write_intent(*, task: Task, author: str = "") -> bool:
    """Commit ``task``'s intent file (git, under the room's repository lock): call it
    with no transaction open."""
    try:
        return intent_write(repo_path=task.room.repo_path, task_id=task.pk, text=task_intent(task), author=author)
    except PathRefused as exc:
        raise RoomError(f"The intent file cannot be written: {exc}.", code="repo") from None


def task_update_intent(*, task: Task, actor: AbstractBaseUser, objective: str, definition_of_done: str,
                       prerequisites: str, constraints: str) -> bool:
    """A person edits the intent mid-flight; running sessions see it at their next boundary.

    The intent file is committed first, with no transaction open (git leaves the file as
    it was when it fails: nothing changed anywhere); the row, which sessions read,
    follows. Should the row's update then fail, the previous intent is committed back,
    so the file and the row never disagree.
    """
    check_may_act_in(task.room, actor)
    if not objective.strip():
        raise RoomError("The objective cannot be empty.", code="invalid")
    # Two edits at once would otherwise interleave: file A, file B, row B, row A.
    with task_intent_lock(task.room.repo_path, task.pk):
        return _task_update_intent(task=task, actor=actor, objective=objective,
                                   definition_of_done=definition_of_done, prerequisites=prerequisites,
                                   constraints=constraints)


def _task_update_intent(*, task: Task, actor: AbstractBaseUser, objective: str, definition_of_done: str,
                        prerequisites: str, constraints: str) -> bool:
    fields = ["objective", "definition_of_done", "prerequisites", "constraints"]
    before = {name: getattr(task, name) for name in fields}
    task.objective, task.definition_of_done = objective.strip(), definition_of_done
    task.prerequisites, task.constraints = prerequisites, constraints
    try:
        changed = task_write_intent(task=task, author=actor.get_username())
    except BaseException:
        for name, value in before.items():
            setattr(task, name, value)
        raise
    try:
        with transaction.atomic(durable=True):
            task.save(update_fields=fields)
    except BaseException:
        for name, value in before.items():
            setattr(task, name, value)
        if changed:
            task_write_intent(task=task, author=actor.get_username())
        raise
    return changed
