from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from observations.replay.trajectory import (
    FileAccess,
    Step,
    ToolEvent,
    Trajectory,
    TrajectoryFormatError,
    text_sha256,
)


def read(start=None, end=None, path="a.py"):
    return FileAccess("read", path, start, end)


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        (read(), read(5, 9), True),
        (read(1, 10), read(10, 20), True),
        (read(1, 10), read(11, 20), False),
        (read(30, None), read(1, 29), False),
        (read(30, None), read(1, 30), True),
        (read(-20, None), read(), True),
        (read(-20, None), read(100, None), True),
        (read(-20, None), read(-5, None), True),
        (read(-20, None), read(1, 10), False),  # position unknown: never claimed
        (read(1, 10), read(1, 10, path="b.py"), False),
    ],
)
def test_overlap_of_line_ranges(a, b, overlap):
    assert a.overlaps(b) is overlap
    assert b.overlaps(a) is overlap


def test_describe_names_kind_path_and_lines():
    assert read().describe() == "read a.py"
    assert read(3, 4).describe() == "read a.py lines 3-4"
    assert read(3, None).describe() == "read a.py lines 3-end"
    assert read(-7, None).describe() == "read a.py last 7 lines"


def sample() -> Trajectory:
    output = "<returncode>0</returncode>\n<output>\nline\n</output>"
    return Trajectory(
        source="atrium",
        trajectory_id="room-1/session-2",
        path="",
        model="anthropic:claude-sonnet-4",
        system_prompt="You are a coding agent.",
        task="Fix the bug; don't touch vendor/.",
        steps=(
            Step(
                index=0,
                assistant_text="Let me look.",
                events=(
                    ToolEvent(
                        call_id="c1",
                        tool="bash",
                        arguments={"command": "sed -n 1,2p a.py", "timeout": 30},
                        output=output,
                        accesses=(FileAccess("read", "a.py", 1, 2, text_sha256(output)),),
                        exit_code=0,
                    ),
                ),
                reported_input_tokens=1200,
                reported_output_tokens=40,
                cached_input_tokens=1024,
            ),
            Step(
                index=1, assistant_text="oops", notice="Please call a tool.", kept_in_history=False
            ),
        ),
        meta={"repo_root": "/srv/repo", "tags": ["a", 1]},
    )


def test_neutral_json_round_trips_through_text():
    original = sample()
    text = json.dumps(original.to_json())
    loaded = Trajectory.from_json(json.loads(text), path="x.atrium.json")
    assert loaded == replace(original, path="x.atrium.json")


def test_optional_fields_take_their_defaults():
    data = sample().to_json()
    for step in data["steps"]:
        for key in ("reported_input_tokens", "notice", "kept_in_history"):
            step.pop(key)
        for event in step["events"]:
            event.pop("exit_code")
            event["accesses"] = [{"kind": "list", "path": "src"}]
    del data["meta"]
    loaded = Trajectory.from_json(data)
    assert loaded.meta == {}
    assert loaded.steps[1].kept_in_history is True and loaded.steps[1].notice is None
    assert loaded.steps[0].events[0].accesses == (FileAccess("list", "src"),)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="something-else"), "format: expected 'atrium-trajectory'"),
        (lambda d: d.update(version=2), "version: 2 is not supported"),
        (lambda d: d.pop("task"), "trajectory.task: missing"),
        (lambda d: d.update(steps={}), "trajectory.steps: expected list"),
        (lambda d: d["steps"][0].update(index="0"), "steps[0].index: expected int"),
        (
            lambda d: d["steps"][0].update(reported_input_tokens=True),
            "steps[0].reported_input_tokens: expected int",
        ),
        (
            lambda d: d["steps"][0]["events"][0].update(arguments=[]),
            "steps[0].events[0].arguments: expected dict",
        ),
        (
            lambda d: d["steps"][0]["events"][0]["accesses"][0].update(kind="delete"),
            "steps[0].events[0].accesses[0].kind: 'delete' is not one of",
        ),
        (lambda d: d["steps"].append("step"), "steps[2]: expected an object, got str"),
    ],
)
def test_bad_neutral_json_is_refused_naming_the_field(mutate, message):
    data = copy.deepcopy(sample().to_json())
    mutate(data)
    with pytest.raises(
        TrajectoryFormatError, match=message.replace("[", r"\[").replace("]", r"\]")
    ):
        Trajectory.from_json(data)


def test_events_lists_every_call_in_step_order():
    assert [e.call_id for e in sample().events] == ["c1"]
