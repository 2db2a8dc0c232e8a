"""Rooms linked to an upstream, with whole replay sessions run in this process against a
forge on this machine: the team's newest work is in main before a session starts, the
merged work goes back upstream, and a proposing room opens a pull request for a passing
session (its state on the session page) and merges nothing. The token appears in no
page, message, log line, commit, sandbox environment or stored row but its own."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from django.test import Client

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_RULES
from rooms.models import Message, RoomAgent, RoomUpstream
from rooms.repository.git import git
from rooms.repository.prepare import UpstreamRepository
from rooms.repository.ssh import new_deploy_key, scan_host_keys, ssh_address
from rooms.repository.upstream import Upstream
from rooms.services import room_create
from sessions.models import ApprovalRule, Observation, SessionEvent, SessionProposal
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session
from tests.rooms import upstream_server
from tests.rooms.ssh_server import ssh_server  # noqa: F401 (the fixture)
from tests.session_fixtures import DEMO_REPO

TOKEN = "forge-token-" + "t0k3n" * 6


@pytest.fixture
def forge(tmp_path, settings):
    team = tmp_path / "team"
    shutil.copytree(DEMO_REPO, team)
    git("init", "--quiet", "--initial-branch", "main", cwd=team)
    git("add", "--all", cwd=team)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "the team's code", cwd=team)
    root = tmp_path / "forge"
    git("clone", "--quiet", "--bare", str(team), str(root / "team" / "stats.git"), cwd=tmp_path)
    served, server = upstream_server.start(root, TOKEN)
    settings.ATRIUM_UPSTREAM_HOSTS = [served.url]
    try:
        yield served, team
    finally:
        server.shutdown()
        server.server_close()


def _room(person, served, after_work: str, source: UpstreamRepository | None = None):
    source = source or UpstreamRepository(upstream=Upstream(url=f"{served.url}/team/stats.git", branch="main",
                                                            token=TOKEN),
                                          after_work=after_work, forge="github", api_url=f"{served.url}/api/v3")
    room = room_create(owner=person, name=f"Upstream {after_work}", check_command="python -m pytest -q",
                       source=source)
    agent = AgentProfile.objects.create(name="fixer", model="replay:demo-fix-median.json", context_window=32_000,
                                        output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    for tool, path_glob, command_prefix in DEMO_RULES:
        ApprovalRule.objects.create(room=room, tool=tool, path_glob=path_glob, command_prefix=command_prefix,
                                    decision="allow")
    ApprovalRule.objects.create(room=room, tool="edit_file", path_glob="*.py", decision="allow")
    ApprovalRule.objects.create(room=room, tool="shell", command_prefix="python -m pytest", decision="allow")
    return room, agent


def _team_pushes(served, team: Path, name: str) -> str:
    (team / name).write_text("from the team\n")
    git("add", "--all", cwd=team)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", f"team: {name}", cwd=team)
    git("push", "--quiet", str(served.root / "team" / "stats.git"), "main", cwd=team)
    return git("rev-parse", "HEAD", cwd=team).strip()


def _nowhere_but_its_row(room, caplog, pages: list[str], secret: str = TOKEN,
                         stored=lambda link: link.token) -> None:
    assert secret in stored(RoomUpstream.objects.get(room=room)).replace("\n", "")
    assert not any(secret in m.text for m in Message.objects.filter(room=room))
    assert not any(secret in str(e.payload) for e in SessionEvent.objects.filter(session__task__room=room))
    assert secret not in caplog.text
    assert all(secret not in page for page in pages)
    # Nothing the agent ran or read (every tool result, the sandbox's included) carries it.
    observed = Observation.objects.filter(session__task__room=room)
    assert observed.exists() and not any(secret.encode() in o.blob.data for o in observed)
    repo = Path(room.repo_path)
    assert secret not in (repo / ".git" / "config").read_text()
    assert secret not in git("log", "--all", "-p", "--format=%B", cwd=repo)


def test_a_session_starts_from_the_teams_newest_work_and_its_merge_goes_back(person, forge, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    served, team = forge
    room, agent = _room(person, served, RoomUpstream.AfterWork.PUSH_MAIN)
    newest = _team_pushes(served, team, "TEAM.md")
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    repo = Path(room.repo_path)
    assert git("merge-base", "--is-ancestor", newest, session.base_commit, cwd=repo, check=False) == ""
    upstream_repo = served.root / "team" / "stats.git"
    fixed = git("show", "main:textstats.py", cwd=upstream_repo)  # the merged work, pushed back
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in fixed
    assert git("merge-base", "--is-ancestor", newest, "main", cwd=upstream_repo, check=False) == ""
    said = [m.text for m in Message.objects.filter(room=room, kind=Message.Kind.SYSTEM)]
    assert any("took in the upstream's main" in text for text in said)  # main had the task's intent commit
    assert any("pushed to the upstream's main" in text for text in said)
    client = Client()
    client.force_login(person)
    pages = [client.get(f"/rooms/{room.slug}/").content.decode(), client.get(f"/sessions/{session.pk}/").content.decode()]
    _nowhere_but_its_row(room, caplog, pages)


def test_a_proposing_room_opens_a_pull_request_and_merges_nothing(person, forge, caplog):
    caplog.set_level(logging.DEBUG)
    served, _team = forge
    room, agent = _room(person, served, RoomUpstream.AfterWork.PROPOSE)
    repo = Path(room.repo_path)
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    main_before = git("rev-parse", "main", cwd=repo).strip()
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert "proposed atrium/session-" in session.reason
    assert git("rev-parse", "main", cwd=repo).strip() == main_before  # nothing merged
    upstream_repo = served.root / "team" / "stats.git"
    # The work alone, on the upstream's tip: no intent file of the room's goes out.
    assert git("rev-parse", f"{session.branch}^", cwd=upstream_repo).strip() == \
        git("rev-parse", "main", cwd=upstream_repo).strip()
    proposed = git("diff", "--name-only", "main", session.branch, cwd=upstream_repo).split()
    assert proposed == ["textstats.py"]
    proposal = SessionProposal.objects.get(session=session)
    opened = served.proposals[proposal.number]
    assert opened["head"] == session.branch and opened["base"] == "main" and opened["title"] == "Fix median"
    assert f"/sessions/{session.pk}/" in opened["body"]
    client = Client()
    client.force_login(person)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f"pull request #{proposal.number}" in page and ">open<" in page
    served.proposals[proposal.number]["merged_at"] = "2026-12-05T12:00:00Z"
    client.post(f"/sessions/{session.pk}/proposal/")
    assert SessionProposal.objects.get(session=session).state == "merged"
    _nowhere_but_its_row(room, caplog, [page, client.get(f"/sessions/{session.pk}/").content.decode()])


def test_an_unreachable_upstream_leaves_the_session_to_work_on_main_as_it_is(person, forge):
    served, _team = forge
    room, agent = _room(person, served, RoomUpstream.AfterWork.PUSH_MAIN)
    RoomUpstream.objects.filter(room=room).update(token="revoked-" + TOKEN)
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason  # merged in the room all the same
    said = [m.text for m in Message.objects.filter(room=room, kind=Message.Kind.SYSTEM)]
    assert any("could not be brought in" in text and "refused the token" in text for text in said)
    assert any("could not be pushed to the upstream's main" in text for text in said)
    assert not any("revoked-" in text for text in said)


def test_a_host_the_operator_no_longer_allows_is_not_reached(person, forge, settings):
    served, team = forge
    room, agent = _room(person, served, RoomUpstream.AfterWork.PUSH_MAIN)
    settings.ATRIUM_UPSTREAM_HOSTS = []
    _team_pushes(served, team, "LATER.md")
    before = len(served.requests)
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert len(served.requests) == before  # not one request to it
    said = [m.text for m in Message.objects.filter(room=room, kind=Message.Kind.SYSTEM)]
    assert any("no longer reachable from this hub" in text for text in said)


def test_a_room_linked_over_ssh_works_from_the_teams_code_and_its_key_stays_in_its_row(person, tmp_path, settings,
                                                                                      ssh_server, caplog):  # noqa: F811
    """The room's first fetch comes with its first session (main then holds only the
    task's intent file); the deploy key's private half is nowhere else."""
    caplog.set_level(logging.DEBUG)
    team = tmp_path / "team"
    shutil.copytree(DEMO_REPO, team)
    git("init", "--quiet", "--initial-branch", "main", cwd=team)
    git("add", "--all", cwd=team)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "the team's code", cwd=team)
    bare = tmp_path / "forge" / "stats.git"
    git("clone", "--quiet", "--bare", str(team), str(bare), cwd=tmp_path)
    settings.ATRIUM_UPSTREAM_HOSTS = [f"ssh://127.0.0.1:{ssh_server.port}"]
    url = ssh_server.url(bare)
    upstream = Upstream(url=url, branch="main", deploy_key=new_deploy_key(),
                        known_hosts=scan_host_keys(ssh_address(url)))
    room, agent = _room(person, None, RoomUpstream.AfterWork.PUSH_MAIN,
                        source=UpstreamRepository(upstream=upstream, after_work=RoomUpstream.AfterWork.PUSH_MAIN))
    ssh_server.authorize(RoomUpstream.objects.get(room=room).public_key)
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in git("show", "main:textstats.py", cwd=bare)
    assert git("ls-tree", "main", "--", ".atrium", cwd=bare) == ""  # the intent file stays in the room
    said = [m.text for m in Message.objects.filter(room=room, kind=Message.Kind.SYSTEM)]
    assert any("now holds the upstream's main" in text for text in said)
    assert any("pushed to the upstream's main" in text for text in said)
    client = Client()
    client.force_login(person)
    pages = [client.get(f"/rooms/{room.slug}/").content.decode(), client.get(f"/sessions/{session.pk}/").content.decode()]
    secret = "".join(line for line in upstream.deploy_key.splitlines() if "PRIVATE KEY" not in line)
    _nowhere_but_its_row(room, caplog, pages, secret=secret[:40], stored=lambda link: link.deploy_key)
