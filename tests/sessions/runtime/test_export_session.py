"""A real session exported as a trajectory, read back and replayed."""

from __future__ import annotations

from django.core.management import call_command

from observations.replay import load_trajectories
from observations.replay.eval.engine import replay
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session


def test_a_session_exports_as_a_trajectory_the_replay_reads(tmp_path, person, demo_room, replay_agent,
                                                            allow_demo_tools):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass",
                       constraints="Don't change the tests.")
    session = session_start(task=task, agent=replay_agent, actor=person)
    run_session(session.pk)
    out = tmp_path / "demo.atrium.json"
    call_command("export_session", session.pk, out=str(out))

    loaded = load_trajectories([out])
    assert loaded.problems == []
    (trajectory,) = loaded.trajectories
    assert trajectory.source == "atrium" and len(trajectory.steps) == 5
    assert "Don't change the tests." in trajectory.task
    reads = [a for e in trajectory.events for a in e.accesses if a.kind == "read"]
    assert [a.path for a in reads] == ["textstats.py", "test_textstats.py"]
    assert any(a.kind == "edit" and a.path == "textstats.py" for e in trajectory.events for a in e.accesses)
    assert trajectory.steps[0].reported_input_tokens > 0
    result = replay(trajectory, "on_demand", 32_000)
    assert result.failure is None and len(result.sent) == 5
