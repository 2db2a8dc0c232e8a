"""Crafted trajectories for the evaluator tests (builders only, no tests; plain data, no files)."""

from __future__ import annotations

from observations.replay.trajectory import FileAccess, Step, ToolEvent, Trajectory, text_sha256


def file_text(path: str, lines: int, version: int = 0) -> str:
    return "".join(
        f"{path}:{n} v{version} = compute(value_{n}, other_{n})\n" for n in range(1, lines + 1)
    )


def read_event(
    call_id: str, path: str, text: str, start: int | None = None, end: int | None = None
) -> ToolEvent:
    return ToolEvent(
        call_id=call_id,
        tool="bash",
        arguments={"command": f"cat {path}"},
        output=text,
        accesses=(FileAccess("read", path, start, end, text_sha256(text)),),
    )


def edit_event(call_id: str, path: str) -> ToolEvent:
    return ToolEvent(
        call_id=call_id,
        tool="bash",
        arguments={"command": f"sed -i s/a/b/ {path}"},
        output="",
        accesses=(FileAccess("edit", path),),
    )


def shell_event(call_id: str, command: str, output: str) -> ToolEvent:
    return ToolEvent(call_id=call_id, tool="bash", arguments={"command": command}, output=output)


def trajectory(
    events: list[ToolEvent], *, steps: list[Step] | None = None, trajectory_id: str = "crafted"
) -> Trajectory:
    """One step per event, unless ``steps`` are given."""
    if steps is None:
        steps = [
            Step(
                index=n,
                assistant_text=f"THOUGHT: step {n}",
                events=(event,),
                reported_output_tokens=10,
            )
            for n, event in enumerate(events)
        ]
    return Trajectory(
        source="atrium",
        trajectory_id=trajectory_id,
        path=f"{trajectory_id}.atrium.json",
        model="test:model",
        system_prompt="You are a careful coding agent. " * 20,
        task="Fix the config loader; do not touch vendor/.",
        steps=tuple(steps),
        meta={"repo_root": "/repo"},
    )


CONFIG = file_text("src/config.py", 120)


def rereads_config(*, others: int = 4, attempts: int = 3) -> Trajectory:
    """Read config, then other files, then config again (unchanged) several times."""
    events = [read_event("c0", "src/config.py", CONFIG)]
    events += [
        read_event(f"o{n}", f"src/other{n}.py", file_text(f"src/other{n}.py", 120))
        for n in range(others)
    ]
    events += [read_event(f"r{n}", "src/config.py", CONFIG) for n in range(attempts)]
    return trajectory(events)
