"""A whole replay session run in this process (the worker's code without Celery)."""

from __future__ import annotations

from pathlib import Path

from rooms.repository.git import git
from sessions.ledger.state_store import session_gateway_state
from sessions.models import Approval, Observation, ProviderCall, SessionEvent
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session


def test_a_replay_session_reads_tests_fixes_verifies_and_merges(person, demo_room, replay_agent, allow_demo_tools):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass",
                       constraints="Don't change the tests.")
    session = session_start(task=task, agent=replay_agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds.count("model.reply") == 5 and "verify" in kinds and "merge" in kinds
    verify = SessionEvent.objects.get(session=session, kind="verify")
    assert verify.payload["line"].startswith("verify #1: python -m pytest -q → exit 0")
    repo = Path(demo_room.repo_path)
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (repo / "textstats.py").read_text()
    assert ".atrium/tasks" in git("log", "--stat", "--format=%s", cwd=repo)
    assert Observation.objects.filter(session=session).count() == 6
    assert ProviderCall.objects.filter(session=session).count() == 5
    assert session.tokens_input > 0


def test_an_ask_parks_the_session_until_a_person_decides(person, demo_room, replay_agent):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "awaiting_approval"
    approval = Approval.objects.get(session=session)
    assert approval.tool == "shell" and approval.state == "pending"
    approval_decide(approval=approval, actor=person, decision="always")
    session.refresh_from_db()
    assert session.state == "queued"
    run_session(session.pk)  # runs on to the edit, which asks again
    session.refresh_from_db()
    assert session.state == "awaiting_approval"
    approval_decide(approval=Approval.objects.get(session=session, tool="edit_file"), actor=person, decision="approve")
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    shell_results = Observation.objects.filter(session=session, tool="shell")
    assert all("[A person (pat) approved this call.]" in o.blob.data.decode() for o in shell_results[:1])


def test_chat_that_mentions_the_agent_is_delivered_and_other_chat_is_not(person, demo_room, replay_agent,
                                                                         allow_demo_tools):
    from rooms.services import message_post

    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    message_post(room=demo_room, author=person, kind="chat", text="lunch at noon, anyone?")
    mention = message_post(room=demo_room, author=person, kind="chat", text="@fixer keep the diff small")
    run_session(session.pk)
    delivered = SessionEvent.objects.filter(session=session, kind="input.delivered")
    assert [(e.payload["kind"], e.payload["message_id"]) for e in delivered] == [("chat", mention.pk)]
    session.refresh_from_db()
    texts = [e["text"] for e in session_gateway_state(session)["entries"]]
    assert "[pat in the room, D1] @fixer keep the diff small" in texts
    assert not any("lunch" in t for t in texts)
    assert session.runtime_state["chat_cursor"] == mention.seq
    # The status refresh shows the decisions without reading the gateway's state.
    assert "@fixer keep the diff small" in [d["text"] for d in session.decisions]


def test_path_rules_judge_the_resolved_path_not_its_spelling(person, demo_room):
    from agents.models import AgentProfile
    from rooms.models import RoomAgent
    from sessions.models import ApprovalRule

    ApprovalRule.objects.create(room=demo_room, tool="write_file", path_glob="src/**", decision="allow")
    ApprovalRule.objects.create(room=demo_room, tool="*", path_glob="vendor/**", decision="deny")
    demo_room.check_command = ""
    demo_room.save()
    agent = AgentProfile.objects.create(name="sneaky", model="replay:sneaky-paths.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    task = task_create(room=demo_room, actor=person, title="Paths", objective="Write files")
    session = session_start(task=task, agent=agent, actor=person)
    run_session(session.pk)
    session.refresh_from_db()
    results = {e.payload["call_id"]: e.payload for e in SessionEvent.objects.filter(session=session, kind="tool.result")}
    detour, direct = results["replay-0-0"], results["replay-0-1"]
    assert detour["is_error"] and "deny" in detour["preview"]
    assert not direct["is_error"]
    assert not (Path(demo_room.repo_path) / "vendor" / "lib.py").exists()


def test_the_demo_runs_again_once_its_bug_is_fixed_and_changes_nothing(person, demo_room, replay_agent,
                                                                     allow_demo_tools):
    """A replay plays its turns whatever happens. On main with the fix merged, its edit
    no longer matches and is refused instead of mangling the fixed code; the tests pass
    and the second run ends with nothing to merge (it once failed every time)."""
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    first = session_start(task=task, agent=replay_agent, actor=person)
    run_session(first.pk)
    fixed = (Path(demo_room.repo_path) / "textstats.py").read_text()
    again = session_start(task=task, agent=replay_agent, actor=person)
    assert again.attempt == 2 and again.previous == first
    run_session(again.pk)
    again.refresh_from_db()
    assert again.state == "succeeded", again.reason
    assert again.reason == "no changes to merge"
    edit = SessionEvent.objects.get(session=again, kind="tool.result", payload__tool="edit_file")
    assert edit.payload["is_error"]
    assert (Path(demo_room.repo_path) / "textstats.py").read_text() == fixed


def test_a_steer_taken_is_answered_before_the_worker_gives_its_turn_back(person, demo_room, replay_agent,
                                                                        allow_demo_tools, settings):
    """The boundary commits the steer before the model call; the worker does not hand the
    session to the queue between the two, even with its time slice used up."""
    from sessions.services.talk import session_steer

    settings.ATRIUM_WORKER_SLICE_SECONDS = 0
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    steer = session_steer(session=session, actor=person, text="Keep the tests as they are.")
    assert run_session(session.pk) == "ran"
    steer.refresh_from_db()
    assert steer.delivered_at is not None
    assert ProviderCall.objects.filter(session=session).count() == 1  # answered, then the turn went back
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds.index("input.delivered") < kinds.index("model.reply")
