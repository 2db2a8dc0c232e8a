"""The fidelity proxy (reads.py): results a policy took out that the recorded agent
needed again, by a re-read, an edit of the path, or a quote in a later action."""

from __future__ import annotations

from observations.gateway.tokens import estimate_tokens
from observations.replay.eval.engine import replay
from observations.replay.trajectory import Step
from tests.replay.test_evaluate_factories import (
    CONFIG,
    edit_event,
    file_text,
    read_event,
    rereads_config,
    trajectory,
)

BIG = 128_000


def config_then_others(last: Step) -> list[Step]:
    """Step 0 reads src/config.py, steps 1–6 read other files, step 7 is ``last``."""
    events = [read_event("c0", "src/config.py", CONFIG)]
    events += [read_event(f"o{n}", f"src/other{n}.py", file_text(f"src/other{n}.py", 120)) for n in range(6)]
    steps = [Step(index=n, assistant_text=f"THOUGHT: step {n}", events=(e,)) for n, e in enumerate(events)]
    return [*steps, last]


def test_keeping_everything_needs_nothing_again():
    run = replay(rereads_config(attempts=3), "none", BIG)
    assert (run.needed, run.needed_tokens, run.needed_steps) == (0, 0, 0)


def test_an_edit_of_a_path_whose_read_was_taken_out_needs_it_again():
    steps = config_then_others(Step(index=7, assistant_text="THOUGHT: fix it", events=(edit_event("e", "src/config.py"),)))
    run = replay(trajectory([], steps=steps), "mask-last-5", BIG)
    # mask-last-5 stubbed config.py at step 6 (five newer results); the edit came a step later.
    assert (run.needed, run.needed_tokens, run.needed_steps) == (1, estimate_tokens(CONFIG), 1)
    assert replay(trajectory([], steps=steps), "masking-10", BIG).needed == 0  # ten turns: still there


def test_a_result_read_again_counts_once_however_often_it_is_read():
    run = replay(rereads_config(others=6, attempts=3), "eager", BIG)
    assert run.rereads_after_eviction == 1 and run.needed == 1


def test_a_quoted_line_needs_the_result_only_when_no_result_in_the_request_holds_it():
    line = CONFIG.splitlines()[41]
    assert len(line) >= 40
    quoting = Step(index=7, assistant_text=f"THOUGHT: the bug is here:\n    {line}\n")
    assert replay(trajectory([], steps=config_then_others(quoting)), "mask-last-5", BIG).needed == 1
    assert replay(trajectory([], steps=config_then_others(quoting)), "none", BIG).needed == 0
    short = Step(index=7, assistant_text=f"THOUGHT: {line[:30]}")
    assert replay(trajectory([], steps=config_then_others(short)), "mask-last-5", BIG).needed == 0


def test_a_line_held_by_several_results_taken_out_counts_one_need():
    line = CONFIG.splitlines()[41]
    twice = [read_event("c0", "src/config.py", CONFIG), read_event("c1", "src/config.py", CONFIG)]
    twice += [read_event(f"o{n}", f"src/other{n}.py", file_text(f"src/other{n}.py", 120)) for n in range(6)]
    steps = [Step(index=n, assistant_text=f"THOUGHT: step {n}", events=(e,)) for n, e in enumerate(twice)]
    steps.append(Step(index=8, assistant_text=f"THOUGHT: here:\n{line}\n"))
    run = replay(trajectory([], steps=steps), "mask-last-5", BIG)
    assert run.needed == 1
