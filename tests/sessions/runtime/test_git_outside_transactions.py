"""Git runs with no database transaction open: a commit, a clone or a merge can take
seconds while a transaction would hold its row locks (and the room's repository lock
would be taken inside them); and git cannot roll back with the database."""

from __future__ import annotations

import subprocess

import pytest
from django.db import connection

from rooms.repository.git import GitError
from rooms.repository.intent import intent_read
from sessions.models import Task
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create, task_update_intent
from sessions.worker.run import run_session


@pytest.fixture
def git_calls(monkeypatch):
    """Every git command the hub runs, with whether a transaction was open around it."""
    calls: list[tuple[str, bool]] = []
    real_popen = subprocess.Popen

    def popen(argv, *args, **kwargs):
        if isinstance(argv, list) and argv and argv[0] == "git":
            calls.append((" ".join(argv[1:]), connection.in_atomic_block))
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    return calls


def test_no_git_command_runs_inside_a_transaction_from_room_to_merged_session(
        git_calls, person, demo_room, replay_agent, allow_demo_tools):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    task_update_intent(task=task, actor=person, objective="Make the tests pass, all of them",
                       definition_of_done="", prerequisites="", constraints="")
    session = session_start(task=task, agent=replay_agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert any(" commit " in f" {call} " for call, _ in git_calls) and any("merge" in call for call, _ in git_calls)
    assert [call for call, in_transaction in git_calls if in_transaction] == []


def _failing_commit(monkeypatch):
    real_popen = subprocess.Popen

    def popen(argv, *args, **kwargs):
        if isinstance(argv, list) and argv[:1] == ["git"] and {"commit", "commit-tree"} & set(argv):
            argv = ["sh", "-c", "echo 'simulated: disk full' >&2; exit 1"]
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)


def test_a_task_whose_intent_cannot_be_committed_leaves_no_row(monkeypatch, person, demo_room):
    _failing_commit(monkeypatch)
    with pytest.raises(GitError):
        task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    assert not Task.objects.exists()


def test_an_intent_edit_git_refuses_leaves_the_task_as_it_was(monkeypatch, person, demo_room):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    before = intent_read(repo_path=demo_room.repo_path, task_id=task.pk)
    _failing_commit(monkeypatch)
    with pytest.raises(GitError):
        task_update_intent(task=task, actor=person, objective="Something else", definition_of_done="",
                           prerequisites="", constraints="")
    task.refresh_from_db()
    assert task.objective == "Make the tests pass"
    assert intent_read(repo_path=demo_room.repo_path, task_id=task.pk) == before


def test_two_intent_edits_at_once_leave_the_file_and_the_row_agreeing(monkeypatch, person, demo_room):
    """Without a lock across the commit and the row, edit A's row could land after edit B's
    file: sessions would follow B while the page showed A."""
    import threading
    import time

    from django.db import close_old_connections

    from sessions.services import tasks as task_services


    task = task_create(room=demo_room, actor=person, title="Fix median", objective="first")
    real_write = task_services.intent_write
    b_may_start = threading.Event()

    def slow_for_a(**kwargs):
        changed = real_write(**kwargs)
        if "edit A" in kwargs["text"]:
            b_may_start.set()
            time.sleep(1.0)  # B commits its file (and, unlocked, its row) in this gap
        return changed

    monkeypatch.setattr(task_services, "intent_write", slow_for_a)

    def edit(objective: str) -> None:
        try:
            task_update_intent(task=Task.objects.get(pk=task.pk), actor=person, objective=objective,
                               definition_of_done="", prerequisites="", constraints="")
        finally:
            close_old_connections()

    a = threading.Thread(target=edit, args=("edit A",))
    a.start()
    assert b_may_start.wait(10)
    b = threading.Thread(target=edit, args=("edit B",))
    b.start()
    a.join(20)
    b.join(20)
    task.refresh_from_db()
    on_file = intent_read(repo_path=demo_room.repo_path, task_id=task.pk)
    assert task.objective == "edit B" and "edit B" in on_file and "edit A" not in on_file
