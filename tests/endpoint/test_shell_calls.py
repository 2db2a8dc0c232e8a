"""A shell-only agent's reads (mini-swe-agent's ``bash`` tool) get ledger ranges, so an
unchanged re-read is a note and edits name their file; anything uncertain is no read."""

from __future__ import annotations

import hashlib
import json

import pytest

from endpoint.conversation import message_digests
from endpoint.feed import changed_by, inferred_changes, observation_input, take
from endpoint.shell_calls import shell_effects
from endpoint.shell_changes import shell_changes
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.messages import Message, Request, ToolCall
from observations.gateway.transcript import Observation
from sessions.runtime.file_changes import paths_changed

FILE = "def mean(values):\n    return sum(values) / len(values)\n" * 30


def mini_output(output: str, returncode: int = 0) -> str:
    """mini-swe-agent 2's observation (mini.yaml's template)."""
    return "{\n" + f'  "returncode": {returncode},\n  "output": {json.dumps(output)}\n' + "}"


def changed(command: str, output: str, earlier=(), kind: str | None = None) -> tuple[str, ...]:
    """The paths a call left changed (of ``kind``: written, deleted, restored)."""
    return tuple(path for path, k in shell_changes(ToolCall("c", "bash", {"command": command}), output, earlier)
                 if kind is None or k == kind)


def script_writes(call: ToolCall, output: str, earlier=()) -> tuple[str, ...]:
    return changed(call.arguments["command"], output, earlier, "written")


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
    assert changed(command, output, kind="deleted") == removed


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


FIX_SCRIPT = "cat <<'EOF' > apply_fix.py\nfile_path = 'pkg/calc.py'\nlines = open(file_path).readlines()\n" \
             "with open(file_path, 'w') as f:\n    f.writelines(lines)\nEOF"


def bash(command: str, call_id: str = "c") -> ToolCall:
    return ToolCall(call_id, "bash", {"command": command})


def test_a_fix_script_written_in_one_call_and_run_in_a_later_one_names_its_file():
    earlier = [bash(FIX_SCRIPT, "c1"), bash("cat apply_fix.py", "c2")]
    assert script_writes(bash("python3 apply_fix.py"), mini_output(""), earlier) == ("pkg/calc.py",)
    assert script_writes(bash("cd sub && python apply_fix.py"), mini_output(""), earlier) == ()  # another file
    assert script_writes(bash("python3 apply_fix.py"), mini_output("Traceback", 1), earlier) == ()  # it failed
    assert script_writes(bash("python3 other.py"), mini_output(""), earlier) == ()
    # The script's paths are where it ran: from pkg/, its 'pkg/calc.py' is pkg/pkg/calc.py.
    moved = [bash(f"cd pkg && {FIX_SCRIPT}", "c1")]
    assert script_writes(bash("cd pkg && python apply_fix.py"), mini_output(""), moved) == ("pkg/pkg/calc.py",)
    # The last here-document written to the script is the one run.
    rewritten = earlier + [bash("cat > apply_fix.py <<EOF\nopen('other.py', 'a')\nEOF", "c3")]
    assert script_writes(bash("python3 apply_fix.py"), mini_output(""), rewritten) == ("other.py",)


@pytest.mark.parametrize(("command", "written"), [
    (f"{FIX_SCRIPT}\npython3 apply_fix.py && rm apply_fix.py", ("pkg/calc.py",)),  # in the same command
    ("python3 -c \"open('a.txt', 'w').write('x')\"", ("a.txt",)),
    ("python -u -W ignore -c \"open('a.txt', 'w')\"", ("a.txt",)),
    ("python3 - <<'EOF'\nopen('b.txt', 'w')\nEOF", ("b.txt",)),
    ("python3 <<'EOF'\nopen('b.txt', 'w')\nEOF", ("b.txt",)),
    ("cat <<'EOF' | python3\nopen('c.txt', 'w')\nEOF", ("c.txt",)),
    ("PYTHONPATH=. /usr/bin/python3.11 -c \"open('d.txt', 'w')\"", ("d.txt",)),
    ("cd /testbed && python -c \"open('e.txt', 'w')\"", ("/testbed/e.txt",)),
    ("python -m pytest -c \"open('f.txt', 'w')\"", ()),  # a module's own options
    ("python3 -c \"$CODE\"", ()),
    ("echo \"open('g.txt', 'w')\"", ()),
])
def test_python_code_given_on_the_line_or_its_standard_input(command, written):
    assert script_writes(bash(command), mini_output("")) == written


@pytest.mark.parametrize(("command", "restored"), [
    ("git checkout pyproject.toml", ("pyproject.toml",)),
    ("git checkout -- a.py b/c.py", ("a.py", "b/c.py")),
    ("git checkout HEAD -- a.py", ("a.py",)),
    ("git checkout HEAD a.py", ("a.py",)),
    ("cd /testbed && git restore a.py", ("/testbed/a.py",)),
    ("git restore --worktree --staged a.py", ("a.py",)),
    ("git checkout HEAD~1 -- a.py", ()),  # another commit's content: a change
    ("git checkout v1 a.py", ()),
    ("git checkout -b topic", ()),
    ("git restore --staged a.py", ()),  # the index only
    ("git restore --source=HEAD~2 a.py", ()),
    ("git restore -p a.py", ()),  # a part of it
    ("git checkout --ours a.py", ()),
    ("git restore --ours a.py", ()),
    ("git checkout .", (".",)),  # the whole worktree, as paths_changed reads it
    ("git checkout missing.py", "error: pathspec 'missing.py' did not match any file(s) known to git"),
])
def test_what_a_shell_call_put_back_as_head_has_it(command, restored):
    expected = () if isinstance(restored, str) else restored
    output = mini_output(restored, 1) if isinstance(restored, str) else mini_output("")
    assert changed(command, output, kind="restored") == expected


def test_a_script_run_reverted_and_a_scratch_folder_removed_leave_only_the_real_change():
    calls = [bash(FIX_SCRIPT, "c1"), bash("python3 apply_fix.py", "c2"), bash("sed -i 's/a/b/' setup.cfg", "c3"),
             bash("git checkout setup.cfg", "c4"), bash("mkdir -p repro/app && echo x > repro/app/m.py", "c5"),
             bash("rm -rf repro apply_fix.py", "c6")]
    records = []
    for n, call in enumerate(calls):
        source = observation_input(call, mini_output(""), calls[:n])
        records += inferred_changes(Observation(obs_id=n, step=n, source=source), n, calls[:n])
    assert [(r["path"], r["kind"]) for r in records] == [
        ("apply_fix.py", "written"), ("pkg/calc.py", "written"), ("setup.cfg", "written"), ("setup.cfg", "restored"),
        ("repro/app/m.py", "written"), ("repro", "deleted"), ("apply_fix.py", "deleted")]
    assert paths_changed(records) == ["pkg/calc.py"]


def test_a_read_before_a_clients_edit_is_stale_in_the_ledger_and_one_after_it_is_not():
    ctx = SessionContext(model="openai:m", system_prompt="s", tools=(), budget=Budget(window=128_000, output_budget=4_000))
    history: list[Message] = [Message("user", "Fix calc.py")]
    commands = ["cat calc.py", "cat other.py", f"{FIX_SCRIPT.replace('pkg/calc.py', 'calc.py')}\npython3 apply_fix.py",
                "sed -i 's/a/b/' other.py && cat other.py"]
    for n, command in enumerate(commands):
        call = ToolCall(f"call_{n}", "bash", {"command": command})
        known = message_digests(history)
        history += [Message("assistant", "THOUGHT", tool_calls=(call,)), Message("tool", mini_output(FILE), tool_call_id=call.id)]
        taken = take(ctx, known, Request(model="m", system="s", tools=(), messages=tuple(history), max_tokens=0))
        for obs_id in taken.observations:
            changed_by(ctx, ctx.observation(obs_id))
        ctx.prepare()
    stale = {entry.range.path: entry.changed_step for entry in ctx.ledger}
    assert stale["calc.py"] is not None  # read, then rewritten by the script
    assert stale["other.py"] is None  # its last read came after its edit


@pytest.mark.parametrize(("command", "changes"), [
    ("git checkout -- pkg/calc.py && python3 -c \"open('pkg/calc.py', 'w')\"", (("pkg/calc.py", "written"),)),
    ("sed -i 's/a/b/' f.py && git checkout f.py", (("f.py", "restored"),)),
    ("git checkout f.py && sed -i 's/a/b/' f.py", (("f.py", "written"),)),
    ("echo x > t.txt; rm t.txt", (("t.txt", "deleted"),)),
    ("rm t.txt; echo y > t.txt", (("t.txt", "written"),)),
])
def test_within_one_call_the_last_change_of_a_path_is_its_change(command, changes):
    assert shell_changes(bash(command), mini_output("")) == changes


@pytest.mark.parametrize("command", [
    "python3 - <<EOF\nopen('$OUT/x.txt', 'w')\nEOF",  # bash expands the body: not what it says
    "python3 - <<EOF\nopen(f'{`pwd`}/x.txt', 'w')\nEOF",
    "cat <<EOF > fix.py\nopen('$TARGET', 'w')\nEOF\npython3 fix.py",
    "cat <<'EOF' > fix.py\nopen('a.txt', 'w')\nEOF\ncat <<'EOF' | tee -a fix.py\nopen('b.txt', 'w')\nEOF\n"
    "python3 fix.py",  # appended to: what the script holds is not known
])
def test_a_script_whose_text_bash_changes_or_that_was_appended_to_names_nothing(command):
    assert not {"a.txt", "b.txt", "$OUT/x.txt", "$TARGET"} & set(changed(command, mini_output("")))


def test_a_quoted_here_document_is_taken_as_written_even_with_dollars():
    command = "python3 - <<'EOF'\nprice = '$5'\nopen('out.txt', 'w')\nEOF"
    assert changed(command, mini_output(""), kind="written") == ("out.txt",)


def test_a_script_written_by_a_call_run_beside_it_later_in_the_turn_is_not_the_one_it_ran():
    ctx = SessionContext(model="openai:m", system_prompt="s", tools=(), budget=Budget(window=128_000, output_budget=4_000))
    run, write = bash("python3 apply_fix.py", "c1"), bash(FIX_SCRIPT, "c2")
    history = [Message("user", "Fix"), Message("assistant", "", tool_calls=(run, write)),
               Message("tool", mini_output(""), tool_call_id="c1"), Message("tool", mini_output(""), tool_call_id="c2")]
    taken = take(ctx, [], Request(model="m", system="s", tools=(), messages=tuple(history), max_tokens=0))
    records = [r for obs_id in taken.observations for r in changed_by(ctx, ctx.observation(obs_id))]
    assert [(r["call_id"], r["path"]) for r in records] == [("c2", "apply_fix.py")]


def test_a_script_is_looked_for_among_the_sessions_recent_calls():
    from endpoint.shell_changes import SCRIPT_LOOKBACK

    others = [bash(f"cat <<'EOF' > note_{n}.txt\napply_fix.py\nEOF", f"o{n}") for n in range(SCRIPT_LOOKBACK)]
    recent = [bash(FIX_SCRIPT, "c1"), *others[1:]]
    assert script_writes(bash("python3 apply_fix.py"), mini_output(""), recent) == ("pkg/calc.py",)
    long_ago = [bash(FIX_SCRIPT, "c1"), *others]
    assert script_writes(bash("python3 apply_fix.py"), mini_output(""), long_ago) == ()
