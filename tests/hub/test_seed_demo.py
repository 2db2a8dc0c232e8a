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
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import RequestFactory

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_CHECK_COMMAND, DEMO_TEST_COMMAND, EXPLORER_NAME
from rooms.models import Membership, Room, RoomAgent
from rooms.repository.git import git
from rooms.repository.prepare import TemplateRepository
from rooms.selectors import assignable_agents
from rooms.services import room_create
from sessions.models import Approval, ApprovalRule, Session, SessionEvent, Task
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create
from sessions.worker.run import run_session

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
    assert files == [task.intent_path, "README.md", "samples/middle.txt", "test_textstats.py", "textstats.py"]


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
    # Starting over in a fresh room keeps the password too.
    assert printed_password(seed("--again")) == third


def test_seed_demo_assigns_a_replay_fixer_whose_tests_run_and_whose_edits_wait_for_a_person():
    seed()
    room = Room.objects.get(name="Demo")
    agent = AgentProfile.objects.get(name="Demo fixer")
    assert (agent.model, agent.context_window, agent.output_budget, agent.eviction_policy) == (
        "replay:demo-tour.json", 8_192, 2_400, "on_demand")
    agent.full_clean()  # the window holds its fixed prompt, output budget and room to work
    assert RoomAgent.objects.filter(room=room, agent=agent).exists()
    rules = set(ApprovalRule.objects.filter(room=room).values_list("tool", "path_glob", "command_prefix", "decision"))
    assert rules == {("shell", "", DEMO_TEST_COMMAND, "allow")}


def test_a_hub_seeded_by_an_earlier_version_moves_its_demo_agent_to_the_tour_and_keeps_a_chosen_model():
    seed()
    room = Room.objects.get(name="Demo")
    agent = AgentProfile.objects.get(name="Demo fixer")
    # As an earlier version left it: the old recording, a large window, edits allowed unasked.
    AgentProfile.objects.filter(pk=agent.pk).update(
        model="replay:demo-fix-median.json", context_window=32_000, output_budget=2_000)
    ApprovalRule.objects.create(room=room, tool="edit_file", path_glob="*.py", decision="allow", created_by=room.owner)
    seed()  # its first session is still queued: a replay plays by turn, so it keeps the old one
    assert AgentProfile.objects.get(pk=agent.pk).model == "replay:demo-fix-median.json"
    Session.objects.filter(agent=agent).update(state="succeeded")
    seed()
    agent.refresh_from_db()
    assert (agent.model, agent.context_window, agent.output_budget) == ("replay:demo-tour.json", 8_192, 2_400)
    assert not ApprovalRule.objects.filter(room=room, tool="edit_file").exists()
    AgentProfile.objects.filter(pk=agent.pk).update(model="openai:gpt-4.1", context_window=128_000)
    seed()
    assert AgentProfile.objects.values_list("model", "context_window").get(pk=agent.pk) == ("openai:gpt-4.1", 128_000)


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
    assert ApprovalRule.objects.filter(room=room).count() == 1
    assert f"/sessions/{session.pk}/" in again and "kept task" in again


def wait_for_state(session: Session, states: set[str], worker) -> None:
    deadline = time.monotonic() + 120
    session.refresh_from_db()
    while session.state not in states:
        assert session.state not in ENDED, (session.state, session.reason)
        assert time.monotonic() < deadline, worker.hub_process.log_tail()
        time.sleep(0.3)
        session.refresh_from_db()


ENDED = {"succeeded", "failed", "cancelled", "timed_out", "needs_merge"}


def test_the_demo_session_folds_asks_waits_for_its_approval_and_merges_on_a_worker(celery_worker):
    """Issue 30, point 4: the demo finished in 3 s with no approval, no fold and one segment."""
    seed()
    demo = get_user_model().objects.get(username="demo")
    session = Session.objects.get(task__room__name="Demo")
    wait_for_state(session, {"waiting"}, celery_worker)
    # The sample text it read first is folded away at the ceiling of its small window.
    (fold,) = SessionEvent.objects.filter(session=session, kind="fold")
    assert fold.payload["reason"] == "ceiling" and fold.payload["tokens_freed"] > 2_000
    assert not SessionEvent.objects.filter(session=session, kind="segment.started").exists()
    question = session.task.room.messages.filter(text__startswith="Found it:").get()
    assert "Reply here or steer me" in question.text
    time.sleep(2)  # it waits for the person, not for a timer
    session.refresh_from_db()
    assert session.state == "waiting" and not Approval.objects.filter(session=session).exists()

    session_steer(session=session, actor=demo, text="Go ahead, and keep the tests as they are.")
    wait_for_state(session, {"awaiting_approval"}, celery_worker)
    approval = Approval.objects.get(session=session, state="pending")
    assert (approval.tool, approval.arguments["path"]) == ("edit_file", "textstats.py")
    assert "return ordered[middle]\n" in git("show", "main:textstats.py", cwd=session.task.room.repo_path)

    approval_decide(approval=approval, actor=demo, decision="approve")
    wait_for_state(session, ENDED, celery_worker)
    assert session.state == "succeeded", session.reason
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


CALC = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\nclass Counter:\n    def __init__(self):\n        self.n = 0\n",
    "test_calc.py": "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
}


def test_the_recorded_explorer_works_in_a_newcomers_room_on_their_own_python_repository(tmp_path):
    """Issue 30, point 4: the only recording fitted only the demo's repository."""
    output = seed()
    assert f"Assign {EXPLORER_NAME} in a room of your own" in output
    newcomer = get_user_model().objects.create_user("newcomer", password="pw-newcomer-1")
    source = tmp_path / "calc"
    source.mkdir()
    for name, text in CALC.items():
        (source / name).write_text(text)
    room = room_create(owner=newcomer, name="Mine", source=TemplateRepository(source))
    explorer = AgentProfile.objects.get(name=EXPLORER_NAME)
    assert explorer in assignable_agents(room)
    RoomAgent.objects.create(room=room, agent=explorer, added_by=newcomer)
    task = task_create(room=room, actor=newcomer, title="Look around", objective="Tell me what is here.")
    session = session_start(task=task, agent=explorer, actor=newcomer)

    assert run_session(session.pk) == "ran"
    approval = Approval.objects.get(session=session, state="pending")  # its test run waits for the newcomer
    assert approval.arguments == {"command": "python -m unittest -q"}
    approval_decide(approval=approval, actor=newcomer, decision="approve")
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    results = {e.payload["tool"]: e.payload for e in SessionEvent.objects.filter(session=session, kind="tool.result")}
    assert not any(r["is_error"] for r in results.values())
    assert "calc.py" in results["list_files"]["preview"] and "def add" in results["search"]["preview"]
    assert results["shell"]["exit_code"] == 0
    said = room.messages.get(kind="agent").text
    assert said.startswith("I've looked around") and "change nothing" in said
    assert git("status", "--porcelain", cwd=room.repo_path) == ""
