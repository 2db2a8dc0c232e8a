"""Three agents on three tasks in one room at once, on real workers: two change the same
file in conflicting ways, and the one that merges second gets the conflict back,
resolves it in its worktree, passes the check and merges. main holds all three changes.

Three workers, one session each: each session is taken by a worker of its own. They
share the hub's folders, or (on PostgreSQL) each has a data folder of its own and works
in its own copy of the room's repository, through the hub's git remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import agent_in, ended, wait_for


@pytest.mark.parametrize("folders", ["shared", "own"])
def test_three_agents_in_one_room_all_merge_and_a_conflict_is_resolved_by_its_session(
        hub_workers, person, demo_room, folders, request, tmp_path):
    if folders == "own" and connection.vendor != "postgresql":
        pytest.skip("an SQLite hub is one machine: its workers share its folders")
    elsewhere = {}
    if folders == "own":
        elsewhere = {"ATRIUM_HUB_URL": request.getfixturevalue("daphne_server").url, "SECRET_KEY": settings.SECRET_KEY,
                     "ATRIUM_BLOB_STORE": "database"}
    workers = [hub_workers(**elsewhere, **({"ATRIUM_DATA_DIR": str(tmp_path / f"machine-{n}")} if elsewhere else {}))
               for n in range(3)]
    workers.append(hub_workers.beat())
    for tool in ("write_file", "shell"):
        ApprovalRule.objects.create(room=demo_room, tool=tool, decision="allow")
    # The check fails on a file left with conflict markers.
    demo_room.check_command = "python3 -m compileall -q ."
    demo_room.save()
    sessions = []
    for name in ("alpha", "beta", "gamma"):
        agent = agent_in(demo_room, name, f"team-{name}.json")
        task = task_create(room=demo_room, actor=person, title=f"Work of {name}", objective="Add yourself")
        sessions.append(session_start(task=task, agent=agent, actor=person))

    for session in sessions:
        wait_for(lambda s=session: ended(s), 240, f"{session.agent.name}'s session to end", workers)
    assert [s.state for s in sessions] == ["succeeded"] * 3, [(s.agent.name, s.reason) for s in sessions]
    # Each on a worker of its own. (Whether they also overlapped in time depends on how
    # loaded the machine is: a first command of 2 s once ended before a late third started.)
    first_claims = [SessionEvent.objects.filter(session=s, kind="session.claimed").order_by("seq").first()
                    for s in sessions]
    assert len({e.payload["worker"].split(":")[1] for e in first_claims}) == 3  # three worker processes

    repo = Path(demo_room.repo_path)
    assert (repo / "team.py").read_text() == "MEMBERS = ['alpha', 'beta']\n"
    assert (repo / "notes.md").read_text() == "gamma was here\n"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
    handed = SessionEvent.objects.filter(session__in=sessions, kind="merge.handed_back")
    assert handed.count() == 1, "exactly one of alpha and beta merged second"
    second = Session.objects.get(pk=handed.get().session_id)
    assert second.agent.name in ("alpha", "beta")
    kinds = list(SessionEvent.objects.filter(session=second).order_by("seq").values_list("kind", flat=True))
    after = kinds[kinds.index("merge.handed_back"):]
    assert "verify" in after and after[-1] != "merge.handed_back"  # checked again, then merged
    # No commit of its branch ever held the markers (a worker elsewhere commits after each
    # step, but not while the merge of main is under way).
    history = subprocess.run(["git", "log", "--format=", "-p", second.branch, "--", "team.py"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout
    assert "<<<<<<<" not in history  # not added by a commit, nor taken out by a later one
    merges = [e.payload for e in SessionEvent.objects.filter(session=second, kind="merge").order_by("seq")]
    assert [m["merged"] for m in merges] == [False, True]
    assert "team.py" in merges[0]["detail"]
    # People see it in the session's log, with what the agent was told.
    client = Client()
    client.force_login(person)
    page = client.get(reverse("sessions:session", args=[second.pk])).content.decode()
    assert "conflict handed back to the agent" in page and "&lt;&lt;&lt;&lt;&lt;&lt;&lt;" in page
