"""Sessions that never run out of room, end to end: a real Celery worker, real git, a
recorded model that writes a 60-line file at every step (and thinks aloud at length),
hundreds of steps, many new segments; then the room's check passes and it merges.

The series of handoff sizes and first-request sizes is printed (run with -s to see it).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from agents.models import AgentProfile
from observations.gateway.handoff import SECTION_BUDGETS
from observations.replay import load_trajectories
from observations.replay.eval.engine import replay
from rooms.models import RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import (
    ApprovalRule,
    HistoryEntry,
    Observation,
    Payload,
    ProviderCall,
    Segment,
    SessionEvent,
)
from sessions.services.lifecycle import session_request_segment, session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import ended, wait_for

CONSTRAINT = "Never edit README.md; it belongs to the docs team."
THOUGHT = ("I am adding the next part of the parser. Each part handles one kind of record, keeps its own "
           "small helpers next to it and is tested by the room's check at the end. ") * 12


def part(k: int) -> str:
    return "".join(f"def part_{k}_rule_{i}(record):\n    return record.get('field_{i}', {k})\n" for i in range(30))


def recording(steps: int, recall_at: int) -> dict:
    """``steps`` turns each writing a 60-line file; at ``recall_at`` the agent recalls the
    first file's body by its ref (the sha256 prefix its payload receipt shows) and
    searches its history; then it finishes."""
    turns = []
    for k in range(steps):
        calls = [{"name": "write_file", "arguments": {"path": f"parser/part_{k}.py", "content": part(k)}}]
        if k == recall_at:
            ref = hashlib.sha256(part(0).encode()).hexdigest()[:12]
            calls = [{"name": "recall", "arguments": {"ref": ref}},
                     {"name": "history_search", "arguments": {"query": "part_0_rule_7"}}]
        turns.append({"text": f"Step {k}. {THOUGHT}", "tool_calls": calls})
    turns.append({"text": "All parts are written."})
    turns.append({"text": "Done: the room's check runs the tests."})
    handoffs = ["## Progress and blockers\nParts written so far are listed under Coordinates; nothing fails.\n"
                "## Next step\nWrite the next part of the parser."]
    return {"model": "scripted-writer", "turns": turns, "handoffs": handoffs}


@pytest.fixture
def parser_room(person, tmp_path):
    template = tmp_path / "template"
    (template / "parser").mkdir(parents=True)
    (template / "parser" / "__init__.py").write_text("")
    (template / "README.md").write_text("# Parser\n")
    (template / "test_parser.py").write_text("def test_the_package_imports():\n    import parser  # noqa: F401\n")
    room = room_create(owner=person, name="Parser", source=TemplateRepository(template),
                       check_command="python -m pytest -q -p no:cacheprovider")
    for tool in ("write_file", "recall", "history_search"):
        ApprovalRule.objects.create(room=room, tool=tool, decision="allow")
    return room


def run_long_session(hub_workers, person, room, tmp_path, *, steps: int, window: int, recall_at: int,
                     ask_every: int = 0):
    """``ask_every``: a person presses New segment every that many steps (besides the
    resets the session needs on its own), each time once the previous one happened."""
    replays = tmp_path / "replays"
    replays.mkdir(exist_ok=True)
    (replays / "writer.json").write_text(json.dumps(recording(steps, recall_at)))
    worker = hub_workers(ATRIUM_REPLAY_DIR=str(replays), ATRIUM_WORKER_SLICE_SECONDS="600")
    agent = AgentProfile.objects.create(name=f"writer-{window}", model="replay:writer.json",
                                        context_window=window, output_budget=4_000)
    RoomAgent.objects.create(room=room, agent=agent)
    task = task_create(room=room, actor=person, title="Write the parser", objective="Write the parser parts.",
                       constraints=CONSTRAINT)
    session = session_start(task=task, agent=agent, actor=person)
    next_ask = ask_every
    while ask_every and not ended(session) and next_ask < steps:
        session.refresh_from_db(fields=["step", "state"])
        if session.step >= next_ask:
            before = Segment.objects.filter(session=session).count()
            session_request_segment(session=session, actor=person)
            wait_for(lambda b=before: Segment.objects.filter(session=session).count() > b or ended(session), 60,
                     "the asked-for segment", [worker])
            next_ask += ask_every
        time.sleep(0.05)
    wait_for(lambda: ended(session), 1_200, "the long session to end", [worker])
    return session


def check_long_session(session, *, steps: int, min_resets: int) -> list[Segment]:
    assert session.state == "succeeded", session.reason
    assert "merged" in session.reason
    session.refresh_from_db()
    assert session.step >= steps
    segments = list(Segment.objects.filter(session=session).order_by("number"))
    print(f"\n{session.agent.context_window:,}-token window, {session.step} steps, {len(segments)} resets")
    print("reset  step  handoff bytes  per section (task/coords/decisions/verify/progress/next/refs)  first request tokens")
    for s in segments:
        sizes = "/".join(str(s.handoff_sizes[name]) for name in
                         ("task", "coordinates", "decisions", "verification", "progress", "next_step", "references"))
        print(f"{s.number - 1:>5} {s.started_step:>5} {s.handoff_bytes:>14,}  {sizes:<60} {s.first_request_tokens:>8,}")
    assert len(segments) >= min_resets
    for segment in segments:
        for name, budget in SECTION_BUDGETS.items():
            assert segment.handoff_sizes[name] <= budget, (segment.number, name)
        assert CONSTRAINT in segment.handoff  # the person's words, verbatim, in every handoff
        assert segment.prose_source == "model"
        assert segment.reason.startswith(("asked for by", "what folds cannot remove", "no fold brings"))
        assert 0 < segment.first_request_tokens < session.agent.context_window * 0.9
    # The earlier segments are searchable, their results archived, every payload stored.
    assert HistoryEntry.objects.filter(session=session, segment=1).exists()
    assert Observation.objects.filter(session=session, state="archived").exists()
    assert Payload.objects.filter(session=session).count() >= steps - 1
    assert ProviderCall.objects.filter(session=session, purpose="handoff").count() == len(segments)
    return segments


def check_recall(session) -> None:
    """The agent recalled the first file's body by its ref: the exact bytes came back."""
    recalled = Observation.objects.select_related("blob").get(session=session, tool="recall")
    assert recalled.blob_id == hashlib.sha256(part(0).encode()).hexdigest()
    searched = SessionEvent.objects.filter(session=session, kind="tool.result", payload__tool="history_search").get()
    assert "part_0_rule_7" in searched.payload["preview"] or "segment 1" in searched.payload["preview"]


@pytest.mark.timeout(1_500)
def test_a_session_writing_a_file_every_step_runs_300_steps_at_32k(hub_workers, person, parser_room, tmp_path):
    # Its own resets would come every ~75 steps here (what no fold removes grows ~250
    # tokens a step: receipts and short turns); a person asks for one every 25 steps, to
    # show the handoff over many resets. The 128k run below resets on its own.
    session = run_long_session(hub_workers, person, parser_room, tmp_path, steps=300, window=32_000, recall_at=150,
                               ask_every=25)
    segments = check_long_session(session, steps=300, min_resets=10)
    assert any(s.reason.startswith("asked for by pat") for s in segments)
    check_recall(session)
    # Exported whole across its segments, it replays without a stop.
    out = tmp_path / "long.atrium.json"
    call_command("export_session", session.pk, out=str(out))
    (trajectory,) = load_trajectories([out]).trajectories
    assert len(trajectory.steps) == session.step
    assert sum(1 for e in trajectory.events if e.tool == "write_file") == 299
    assert CONSTRAINT in trajectory.task
    run = replay(trajectory, "on_demand", 32_000)
    assert run.failure is None and run.segments


@pytest.mark.timeout(1_500)
def test_a_session_writing_a_file_every_step_runs_500_steps_at_128k(hub_workers, person, parser_room, tmp_path):
    session = run_long_session(hub_workers, person, parser_room, tmp_path, steps=500, window=128_000, recall_at=400)
    segments = check_long_session(session, steps=500, min_resets=1)
    assert all(not s.reason.startswith("asked for") for s in segments)  # its own
    check_recall(session)
    main = Path(parser_room.repo_path)
    merged = subprocess.run(["git", "-C", str(main), "show", "main:parser/part_499.py"], capture_output=True, text=True)
    assert merged.returncode == 0 and "part_499_rule_29" in merged.stdout
    assert subprocess.run(["git", "-C", str(main), "show", "main:README.md"], capture_output=True,
                          text=True).stdout == "# Parser\n"
