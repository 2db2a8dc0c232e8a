"""The findings of issue 9, replayed by an attacker with an ordinary account: a room of
their own, an agent whose shell call runs a probe, and a check command that runs it
again. A real Celery worker runs the session with canary secrets in its environment,
next to a victim's room. From the agent's shell call and from the check, reading any
process's environment, the hub's data folder, the other room's repository, another
session's worktree, the database file or the hub's source, writing outside the worktree,
reaching the hub's Redis or database over the network, and running as root all fail."""

from __future__ import annotations

import json
import os
import shlex
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from agents.confinement import room_uid
from agents.models import AgentProfile
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.rooms.factories import make_user
from tests.sessions.runtime.test_workers import ended, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

CANARIES = {
    "OPENAI_API_KEY": "sk-canary-openai-7f3a",
    "ANTHROPIC_API_KEY": "sk-ant-canary-91bd",
    "PGPASSWORD": "canary-pgpassword-22c1",
    "GITHUB_PAT": "ghp_canary_github_pat_5e0f",
    "HTTPS_PROXY": "http://proxyuser:canary-proxy-pw-8a1c@proxy.invalid:3128",
    "AWS_SECRET_ACCESS_KEY": "canary-aws-secret-3d9e",
    "SECRET_KEY": "canary-django-secret-key-0b7d-" + "x" * 30,
}
FILE_CANARY = "canary-file-content-4c2e"

PROBE = r"""#!/bin/bash
# Each attempt that succeeds prints ESCAPED; the report ends with PROBE-END.
where=$1
{
echo "uid=$(id -u) gid=$(id -g)"
echo "--- environments of every visible process"
for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done
echo "--- my environment"
env
grep -qs . @data_canary@ && echo "ESCAPED read-data-folder"
grep -qs . @db_file@ && echo "ESCAPED read-database-file"
grep -qs . @other_repo@/secret.txt && echo "ESCAPED read-other-room"
git -C @other_repo@ log --oneline >/dev/null 2>&1 && echo "ESCAPED git-other-room"
grep -qs . @other_worktree@/secret.txt && echo "ESCAPED read-other-worktree"
grep -qs . @hub_source@ && echo "ESCAPED read-hub-source"
grep -qs . @jobs_canary@ && echo "ESCAPED read-other-session-jobs"
echo x > @data_dir@/pwned-$where 2>/dev/null && echo "ESCAPED write-data-folder"
echo x > @other_repo@/pwned-$where 2>/dev/null && echo "ESCAPED write-other-room"
echo x > @outside@/pwned-$where 2>/dev/null
echo x > /etc/pwned-$where 2>/dev/null && echo "ESCAPED write-etc"
echo x > .git 2>/dev/null && echo "ESCAPED rewrite-git-pointer"
for target in @tcp_targets@; do
  python3 -c "import socket,sys; socket.create_connection(sys.argv[1].rsplit(':',1), 2)" "$target" 2>/dev/null \
    && echo "ESCAPED network-$target"
done
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" @redis_socket@ 2>/dev/null \
  && echo "ESCAPED redis-socket"
touch made-by-$where
echo PROBE-END
} > probe-$where.txt 2>&1
exit 0
"""


def fill(template: str, **values: str) -> str:
    for name, value in values.items():
        template = template.replace(f"@{name}@", value)
    return template


def _tcp_targets() -> list[str]:
    """The hub's own services as host:port, wherever they listen over TCP."""
    targets = []
    for url in (os.environ.get("REDIS_URL", ""), os.environ.get("DATABASE_URL", "")):
        if url.startswith(("redis://", "postgres://", "postgresql://")):
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            targets.append(f"{parts.hostname}:{parts.port or (6379 if url.startswith('redis') else 5432)}")
    return targets or ["127.0.0.1:1"]


def test_neither_an_agents_command_nor_the_check_can_reach_anything_of_the_hub(hub_workers, tmp_path):
    worker = hub_workers(**CANARIES)  # a real Celery worker with the canary secrets in its environment
    data_dir = Path(settings.DATA_DIR)
    (data_dir / "canary.txt").write_text(FILE_CANARY)
    other_worktree = Path(settings.WORKTREES_DIR) / "999999"
    other_worktree.mkdir(parents=True, exist_ok=True)
    (other_worktree / "secret.txt").write_text(FILE_CANARY)
    jobs_canary = Path(settings.JOBS_DIR) / "999999" / "jobs" / "job-x" / "output.log"
    jobs_canary.parent.mkdir(parents=True, exist_ok=True)
    jobs_canary.write_text(FILE_CANARY)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(tmp_path, 0o777)
    os.chmod(outside, 0o777)  # writable by anyone: only the sandbox can stop the write

    victim = make_user("victim")
    victim_source = tmp_path / "victim-src"
    victim_source.mkdir()
    (victim_source / "secret.txt").write_text(FILE_CANARY)
    victims_room = room_create(owner=victim, name="Victim's room", source=TemplateRepository(victim_source))

    db_name = str(connection.settings_dict["NAME"])
    redis_url = os.environ.get("REDIS_URL", "")
    probe = fill(PROBE,
        data_canary=shlex.quote(str(data_dir / "canary.txt")),
        db_file=shlex.quote(db_name if connection.vendor == "sqlite" else "/nonexistent-db-file"),
        other_repo=shlex.quote(victims_room.repo_path),
        other_worktree=shlex.quote(str(other_worktree)),
        hub_source=shlex.quote(str(Path(settings.BASE_DIR) / "hub" / "settings.py")),
        jobs_canary=shlex.quote(str(jobs_canary)),
        data_dir=shlex.quote(str(data_dir)),
        outside=shlex.quote(str(outside)),
        tcp_targets=" ".join(shlex.quote(t) for t in _tcp_targets()),
        redis_socket=shlex.quote(redis_url.removeprefix("unix://") if redis_url.startswith("unix://")
                                 else str(data_dir / "redis.sock")),
    )
    attacker = make_user("attacker")
    source = tmp_path / "attacker-src"
    source.mkdir()
    (source / "probe.sh").write_text(probe)
    room = room_create(owner=attacker, name="Attacker's room", source=TemplateRepository(source),
                       check_command="bash probe.sh check")
    ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
    recording = f"probe-{uuid.uuid4().hex[:8]}.json"
    (Path(settings.REPLAYS_DIR) / recording).write_text(json.dumps({"turns": [
        {"text": "Probing.", "tool_calls": [{"name": "shell", "arguments": {"command": "bash probe.sh shell"}}]},
        {"text": "Done."},
    ]}))
    agent = AgentProfile.objects.create(name="prober", model=f"replay:{recording}", context_window=32_000,
                                        output_budget=2_000, created_by=attacker)
    RoomAgent.objects.create(room=room, agent=agent)
    task = task_create(room=room, actor=attacker, title="Probe", objective="Probe the hub")
    session = session_start(task=task, agent=agent, actor=attacker)

    wait_for(lambda: ended(session), 180, "the session to end", [worker])
    session.refresh_from_db()
    worktree = Path(session.worktree_path)
    for where in ("shell", "check"):
        if where == "check":
            assert SessionEvent.objects.filter(session=session, kind="verify").exists(), session.reason
        report = (worktree / f"probe-{where}.txt").read_text()
        assert report.rstrip().endswith("PROBE-END"), report[-2000:]
        assert "ESCAPED" not in report, [line for line in report.splitlines() if "ESCAPED" in line]
        for name, value in CANARIES.items():
            assert value not in report, f"{name} reached the {where} command"
        for secret in (FILE_CANARY, settings.SECRET_KEY):
            assert secret not in report
        user = room_uid(room.pk) if os.geteuid() == 0 else 65534  # the room's own, on a root hub
        assert "uid=0 " not in report and f"uid={user} gid={user}" in report
        made = worktree / f"made-by-{where}"
        assert made.exists() and made.stat().st_uid != 0, f"the {where} command ran as root"
        assert not (outside / f"pwned-{where}").exists()
        assert not (data_dir / f"pwned-{where}").exists()
        assert not (Path(victims_room.repo_path) / f"pwned-{where}").exists()
