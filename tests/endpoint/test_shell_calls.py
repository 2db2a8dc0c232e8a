"""A shell-only agent's reads (mini-swe-agent's ``bash`` tool) get ledger ranges, so an
unchanged re-read is a note and edits name their file; anything uncertain is no read."""

from __future__ import annotations

import hashlib
import json

import pytest

from endpoint.conversation import message_digests
from endpoint.feed import inferred_changes, observation_input, take
from endpoint.shell_calls import shell_effects, shell_removals
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.messages import Message, Request, ToolCall
from observations.gateway.transcript import Observation
from sessions.runtime.file_changes import paths_changed

FILE = "def mean(values):\n    return sum(values) / len(values)\n" * 30


def mini_output(output: str, returncode: int = 0) -> str:
    """mini-swe-agent 2's observation (mini.yaml's template)."""
    return "{\n" + f'  "returncode": {returncode},\n  "output": {json.dumps(output)}\n' + "}"


def effects(command: str, text: str, tool: str = "bash"):
    return shell_effects(ToolCall("call_1", tool, {"command": command}), text,
                         hashlib.sha256(text.encode()).hexdigest())


def test_a_shell_read_of_one_file_is_its_range_and_an_edit_names_the_file():
    read, written = effects("cat calc.py", mini_output(FILE))
    assert (read.path, read.start, read.end, written) == ("calc.py", None, None, ())
    read, _ = effects("nl -ba src/calc.py | sed -n '5,9p'", mini_output("     5\tx\n"))
    assert (read.path, read.start, read.end) == ("src/calc.py", 5, 9)
    read, _ = effects("cd src && cat /abs/calc.py", mini_output(FILE))
    assert read.path == "/abs/calc.py"
    assert effects("sed -i 's/a/b/' calc.py", mini_output("")) == (None, ("calc.py",))


def test_what_is_not_one_certain_read_is_no_read():
    assert effects("cat a.py b.py", mini_output(FILE))[0] is None
    assert effects("cat *.py", mini_output(FILE))[0] is None
    assert effects("cat missing.py", mini_output("cat: missing.py: No such file or directory\n", 1))[0] is None
    assert effects("tail -n 5 calc.py", mini_output(FILE))[0] is None
    cut = '{\n  "returncode": 0,\n  "output_head": "def",\n  "output_tail": "x",\n  "elided_chars": 12000\n}'
    assert effects("cat big.py", cut)[0] is None  # mini-swe-agent showed its head and tail only
    assert effects("cat calc.py", mini_output(FILE), tool="search") == (None, ())  # not a shell


def test_an_unchanged_shell_reread_goes_upstream_as_a_note():
    ctx = SessionContext(model="openai:m", system_prompt="s", tools=(), budget=Budget(window=128_000, output_budget=4_000))
    history: list[Message] = [Message("user", "Fix calc.py")]
    for n in (1, 2):
        call = ToolCall(f"call_{n}", "bash", {"command": "cat calc.py"})
        known = message_digests(history)
        history += [Message("assistant", "THOUGHT: read it", tool_calls=(call,)),
                    Message("tool", mini_output(FILE), tool_call_id=call.id)]
        take(ctx, known, Request(model="m", system="s", tools=(), messages=tuple(history), max_tokens=0))
    tools = [m.text for m in ctx.prepare().request.messages if m.role == "tool"]
    assert tools[0] == mini_output(FILE) and tools[1].startswith("[unchanged] calc.py")
    assert observation_input(ToolCall("c", "bash", {"command": "cat calc.py"}), mini_output(FILE)).read is not None


@pytest.mark.parametrize(("command", "output", "removed"), [
    ("rm reproduce.py", mini_output(""), ("reproduce.py",)),
    ("cd /testbed && rm -f a.py b/c.py", mini_output(""), ("/testbed/a.py", "/testbed/b/c.py")),
    ("rm *.py", mini_output(""), ()),  # a glob: not known which
    ("rm $TARGET", mini_output(""), ()),
    ("rm gone.py", mini_output("rm: cannot remove 'gone.py': No such file or directory", 1), ()),
    ("rm missing.py keep.py", "rm: cannot remove 'missing.py': No such file or directory", ("keep.py",)),
    ("cat rm.py", mini_output("x"), ()),
])
def test_what_a_shell_call_removed(command, output, removed):
    assert shell_removals(ToolCall("c", "bash", {"command": command}), output) == removed


def test_a_clients_scratch_file_made_and_removed_is_no_change_of_the_session():
    made = observation_input(ToolCall("c1", "bash", {"command": "cat > t.py <<'EOF'\nx = 1\nEOF"}), mini_output(""))
    gone = observation_input(ToolCall("c2", "bash", {"command": "rm t.py"}), mini_output(""))
    edit = observation_input(ToolCall("c3", "bash", {"command": "sed -i 's/a/b/' calc.py"}), mini_output(""))
    records = [change for n, source in enumerate((made, gone, edit))
               for change in inferred_changes(Observation(obs_id=n, step=n, source=source), n)]
    assert [(r["path"], r["kind"], r["inferred"]) for r in records] == [
        ("t.py", "written", True), ("t.py", "deleted", True),
        ("calc.py", "written", True)]
    assert paths_changed(records) == ["calc.py"]
