from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import authenticate as django_authenticate
from django.core.management import call_command
from django.test import RequestFactory

from agents.models import AgentProfile, ApprovalRule, RoomAgent, Session, SessionEvent, Task
from hub.management.commands.seed_demo import DEMO_CHECK_COMMAND, DEMO_TEST_COMMAND
from rooms.models import Membership, Room
from rooms.repository.git import git

pytestmark = pytest.mark.django_db(transaction=True)


def seed(*args: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = re.search(r"log in as\s+demo / (\S+)", output)
    assert match, output
    return match.group(1)


def authenticate(**credentials):
    """As the login page does: with its request (login throttling needs one)."""
    return django_authenticate(RequestFactory().post("/login/"), **credentials)


def test_seed_demo_creates_a_user_who_can_log_in_and_a_demo_room():
    output = seed()
    password = printed_password(output)
    assert "http://127.0.0.1:8000/" in output
    user = authenticate(username="demo", password=password)
    assert user is not None and user.is_staff
    room = Room.objects.get(owner=user, name="Demo")
    assert Membership.objects.get(room=room, user=user).role == "owner"
    assert room.check_command == DEMO_CHECK_COMMAND == "python -m unittest -q"
    assert f"/rooms/{room.slug}/" in output
    files = git("ls-files", cwd=room.repo_path).split()
    task = Task.objects.get(room=room)
    assert files == [task.intent_path, "README.md", "test_textstats.py", "textstats.py"]


def test_the_demo_repository_has_a_real_failing_test(tmp_path):
    seed()
    room = Room.objects.get(name="Demo")
    checkout = tmp_path / "checkout"
    shutil.copytree(room.repo_path, checkout)
    # The room's check, on an interpreter that sees no installed package (-S): a production
    # install of the hub carries no test tools, and the check needs none.
    python, *check = DEMO_CHECK_COMMAND.split()
    assert python == "python"
    result = subprocess.run([sys.executable, "-S", *check], cwd=checkout, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Ran 5 tests" in result.stderr and "FAILED (failures=1)" in result.stderr


def test_seed_demo_again_keeps_the_room_and_the_password_a_new_one_only_when_asked():
    """Issue 30: every start set a new password, logging every open browser out."""
    first = printed_password(seed())
    room = Room.objects.get(name="Demo")
    second_output = seed("--url", "http://example.test:9000/")
    assert printed_password(second_output) == first and "kept the password of user demo" in second_output
    third = printed_password(seed("--new-password"))
    assert third != first
    assert authenticate(username="demo", password=first) is None
    assert authenticate(username="demo", password=third) is not None
    assert (Path(settings.DATA_DIR) / "demo-password").stat().st_mode & 0o777 == 0o600
    assert list(Room.objects.filter(name="Demo").values_list("pk", flat=True)) == [room.pk]
    assert Path(room.repo_path).is_dir()
    assert "http://example.test:9000/" in second_output


def test_seed_demo_assigns_a_replay_fixer_with_rules_that_let_it_work():
    seed()
    room = Room.objects.get(name="Demo")
    agent = AgentProfile.objects.get(name="Demo fixer")
    assert (agent.model, agent.context_window, agent.output_budget, agent.eviction_policy) == (
        "replay:demo-fix-median.json", 32_000, 2_000, "on_demand")
    assert RoomAgent.objects.filter(room=room, agent=agent).exists()
    rules = set(ApprovalRule.objects.filter(room=room).values_list("tool", "path_glob", "command_prefix", "decision"))
    assert rules == {("edit_file", "*.py", "", "allow"), ("shell", "", DEMO_TEST_COMMAND, "allow")}


def test_seed_demo_starts_the_first_task_once_and_says_where_to_watch_it():
    output = seed()
    room = Room.objects.get(name="Demo")
    task = Task.objects.get(room=room)
    assert task.title == "Fix median for even-length input"
    assert task.constraints == "Don't change the tests."
    intent = (Path(room.repo_path) / task.intent_path).read_text()
    assert "Don't change the tests." in intent
    session = Session.objects.get(task=task)
    assert (session.agent.name, session.attempt, session.state) == ("Demo fixer", 1, "queued")
    assert f"http://127.0.0.1:8000/sessions/{session.pk}/" in output
    assert f"http://127.0.0.1:8000/sessions/{session.pk}/ledger/" in output

    again = seed()
    assert Task.objects.filter(room=room).count() == 1 and Session.objects.count() == 1
    assert AgentProfile.objects.filter(name="Demo fixer").count() == 1
    assert ApprovalRule.objects.filter(room=room).count() == 2
    assert f"/sessions/{session.pk}/" in again and "kept task" in again


def test_the_demo_session_runs_to_a_verified_merge_on_a_worker(celery_worker):
    seed()
    session = Session.objects.get(task__room__name="Demo")
    deadline = time.monotonic() + 120
    while session.state not in {"succeeded", "failed", "cancelled", "timed_out", "needs_merge"}:
        assert time.monotonic() < deadline, celery_worker.hub_process.log_tail()
        time.sleep(0.3)
        session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert {"tool.result", "verify", "merge"} <= set(kinds)
    verify = SessionEvent.objects.get(session=session, kind="verify")
    assert verify.payload["line"].startswith(f"verify #1: {DEMO_CHECK_COMMAND} → exit 0")
    room = session.task.room
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in git("show", "main:textstats.py", cwd=room.repo_path)


def test_seed_demo_again_starts_over_in_a_fresh_room_with_the_original_bug():
    call_command("seed_demo", stdout=io.StringIO())
    first = Room.objects.get(name="Demo")
    (Path(first.repo_path) / "marker.txt").write_text("the first room\n")
    out = io.StringIO()
    call_command("seed_demo", "--again", stdout=out)
    rooms = list(Room.objects.filter(name="Demo").order_by("pk"))
    assert len(rooms) == 2 and rooms[1].slug != rooms[0].slug
    fresh = rooms[1]
    assert "return ordered[middle]\n" in (Path(fresh.repo_path) / "textstats.py").read_text()
    assert Session.objects.filter(task__room=fresh, state="queued").count() == 1
    assert f"/rooms/{fresh.slug}/" in out.getvalue()
