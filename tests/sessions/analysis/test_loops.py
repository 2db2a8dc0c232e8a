"""The live loop alarm's decisions, over plain facts and over a live gateway context."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sessions.analysis.facts import ToolFact
from sessions.analysis.loops import (
    FAILING,
    REREAD,
    STALL,
    LoopRules,
    new_alarms,
    suspicions,
    tool_facts,
)
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.units import Outcome
from tests.gateway.factories import call, file_text, make_context, read_input, sha, shell_input
from tests.sessions.runtime.test_loop import FakeHost, turn

RULES = LoopRules(rereads=3, failing_runs=3, window=10, stall_steps=20)
KEY = ("a.py", 1, 40, "f" * 64)


def read(step: int, key=KEY) -> ToolFact:
    return ToolFact(step=step, call_id=f"r{step}", tool="read_file", arguments={"path": key[0]}, read=key)


def shell(step: int, command: str = "pytest -q", code: int | None = 1) -> ToolFact:
    return ToolFact(step=step, call_id=f"s{step}", tool="shell", arguments={"command": command}, exit_code=code)


def kinds(alarms) -> list[str]:
    return [a.kind for a in alarms]


def test_the_same_content_read_three_times_within_the_window_is_a_reread_loop():
    alarms = suspicions([read(1), read(4), read(9)], step=9, rules=RULES)
    assert kinds(alarms) == [REREAD]
    assert alarms[0].subject == "a.py lines 1-40" and alarms[0].count == 3 and alarms[0].steps == (1, 4, 9)
    assert "a.py lines 1-40" in alarms[0].nudge and "3 times" in alarms[0].nudge


def test_reads_spread_wider_than_the_window_or_of_changed_content_are_not():
    assert suspicions([read(1), read(6), read(11)], step=11, rules=RULES) == []
    changed = ("a.py", 1, 40, "0" * 64)
    assert suspicions([read(1), read(2, changed), read(3)], step=3, rules=RULES) == []


def test_an_identical_command_failing_three_times_is_a_loop_and_passing_runs_do_not_count():
    facts = [shell(1), shell(2, code=0), shell(3), shell(4, "pytest  -q ")]
    alarms = suspicions(facts, step=4, rules=RULES)
    assert kinds(alarms) == [FAILING] and alarms[0].subject == "pytest -q" and alarms[0].count == 3
    assert "`pytest -q` failed 3 times" in alarms[0].nudge
    assert suspicions([shell(1), shell(2, "pytest -x"), shell(3)], step=3, rules=RULES) == []


def test_steps_without_a_write_or_a_test_are_a_stall_and_a_write_resets_it():
    listing = [ToolFact(step=s, call_id=f"l{s}", tool="list_files", arguments={}) for s in range(1, 21)]
    assert kinds(suspicions(listing, step=19, rules=RULES)) == []
    stalled = suspicions(listing, step=20, rules=RULES)
    assert kinds(stalled) == [STALL] and stalled[0].key == "stall:0" and stalled[0].count == 20
    wrote = [*listing, ToolFact(step=21, call_id="w", tool="edit_file", arguments={"path": "a.py"})]
    assert suspicions(wrote, step=40, rules=RULES) == []
    assert [a.key for a in suspicions(wrote, step=41, rules=RULES)] == ["stall:21"]
    tested = [*listing, shell(21, "python -m pytest -q", code=1)]
    assert suspicions(tested, step=40, rules=RULES) == []
    assert suspicions([*listing, shell(21, "make check", code=0)], step=30, rules=RULES) == []
    checked = [*listing, shell(21, "./run-checks.sh", code=0)]
    assert suspicions(checked, step=40, rules=RULES, check_command="./run-checks.sh") == []


def test_each_alarm_is_raised_once():
    facts = [read(1), read(2), read(3)]
    first = new_alarms(facts, step=3, raised=[], rules=RULES)
    assert kinds(first) == [REREAD]
    assert new_alarms([*facts, read(4)], step=4, raised=[first[0].key], rules=RULES) == []


def test_thresholds_below_two_are_refused():
    with pytest.raises(ValueError):
        LoopRules(rereads=1)


def test_facts_from_a_live_context_carry_read_keys_and_exit_codes_of_calls_and_of_jobs():
    ctx = make_context(window=60_000)
    text = file_text("a.py", 0, 30)
    ctx.add_assistant("", (call("c1", path="a.py"), call("c2", "shell", command="pytest -q"),
                           call("c3", "shell", command="make test")))
    ctx.add_tool_result(read_input("c1", "a.py", text, 1, 30))
    ctx.add_tool_result(shell_input("c2", "pytest -q", "exit 1 after 0.4 s\n1 failed"))
    ctx.add_tool_result(shell_input("c3", "make test", "Still running (it outlasted the 45 s wait bound); it "
                                                         "continues as job job-0123456789. Collect it."))
    ctx.add_user("[job job-0123456789 finished]\njob job-0123456789 `make test` finished: exit 2 after 1 min",
                 kind="job")
    facts = tool_facts(ctx)
    assert facts[0].read == ("a.py", 1, 30, sha(text))
    assert (facts[1].exit_code, facts[1].job) == (1, None)
    assert (facts[2].exit_code, facts[2].job) == (2, "job-0123456789")


def test_the_step_loop_raises_an_alarm_once_and_the_next_request_carries_the_nudge():
    calls = [turn("Reading again.", (f"c{n}", "read_file", {"path": "a.py"})) for n in range(4)]
    host = FakeHost(turns=[*calls, turn("Done.")])

    def execute(c):
        host.executed.append(c.id)
        from agents.tools.outcome import ToolOutcome
        return ToolOutcome(c.id, c.name, dict(c.arguments), "1\tsame text", path="a.py", line_start=1,
                           line_end=1, range_sha256="e" * 64, file_sha256="e" * 64)

    host.execute = execute
    loop = StepLoop(make_context(window=60_000), RuntimeState(), host, loop_rules=RULES)
    for _ in range(30):
        if loop.advance().outcome is not Outcome.CONTINUE:
            break
    alarms = [p for k, p in host.events if k == "loop.suspected"]
    assert len(alarms) == 1 and alarms[0]["kind"] == REREAD and alarms[0]["step"] == 3
    nudge = alarms[0]["nudge"]
    sent = [[m.text for m in r.messages] for r in host.requests]
    assert nudge not in sent[2] and nudge in sent[3] and sent[4].count(nudge) == 1
    assert loop.state.loop_alarms == [alarms[0]["key"]]


def test_the_alarm_logic_imports_no_django():
    code = ("import sys\nimport sessions.analysis.loops, sessions.analysis.trace, sessions.analysis.transcript\n"
            "import sessions.analysis.chart, sessions.analysis.prefix\nprint('django' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
