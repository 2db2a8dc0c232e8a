"""Properties of the one shell-line parser (observations.shell), which the approval rules
and the replay evaluator (its actions and the SWE-agent reader) both read lines with."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from observations.shell import parse_command, read_line, split_words

# Words made of anything printable, NUL excepted (a command line is C strings).
words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12)
programs = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True).filter(
    lambda p: p not in {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac",
                        "in", "select", "function", "time", "coproc", "env", "nice", "nohup", "timeout", "sudo",
                        "xargs", "exec", "command", "builtin", "stdbuf", "ionice", "setsid", "doas", "chroot",
                        "taskset", "strace", "ltrace", "watch", "unbuffer", "busybox", "script", "su", "flock",
                        "bash", "sh", "zsh", "dash", "ksh", "eval", "source", "find", "git", "python"})
plain_args = st.lists(st.from_regex(r"[a-z0-9_.]{1,6}", fullmatch=True), max_size=3)


@settings(max_examples=300)
@given(argv=st.lists(words, min_size=1, max_size=5))
def test_quoting_round_trips(argv):
    line = " ".join(shlex.quote(word) for word in argv)
    assert split_words(line) == argv
    chain = parse_command(line)
    assert chain is not None and [c.argv for p in chain for c in p] == [argv]


@settings(max_examples=300)
@given(text=st.text(max_size=80))
def test_parsing_never_raises_on_any_text(text):
    parse_command(text)
    split_words(text)
    line = read_line(text)
    assert line.text == text


separators = st.sampled_from([" && ", " || ", "; ", "\n", " | "])


@given(commands=st.lists(st.tuples(programs, plain_args), min_size=1, max_size=5), data=st.data())
def test_lists_and_pipes_split_into_every_command(commands, data):
    line = commands[0][0] + "".join(f" {a}" for a in commands[0][1])
    for program, args in commands[1:]:
        line += data.draw(separators) + program + "".join(f" {a}" for a in args)
    chain = parse_command(line)
    assert [c.argv for pipeline in chain for c in pipeline] == [[p, *a] for p, a in commands]
    assert [i.argv for i in read_line(line).invocations] == [(p, *a) for p, a in commands]


wrappers = st.sampled_from([
    ("env", "FOO=1"), ("env", "-i"), ("timeout", "60"), ("timeout", "-s", "KILL", "5"), ("nice", "-n", "10"),
    ("nohup",), ("xargs", "-0"), ("sudo",), ("stdbuf", "-oL"),
])


@given(stack=st.lists(wrappers, min_size=1, max_size=3), program=programs, args=plain_args)
def test_wrappers_are_seen_through_to_the_program(stack, program, args):
    line = " ".join(" ".join(w) for w in stack) + " " + " ".join([program, *args])
    seen = read_line(line)
    assert (program, *args) in [i.argv for i in seen.invocations]
    assert [i.program for i in seen.invocations if not i.wrapper][-1] == program


@given(shell=st.sampled_from(["bash", "sh", "/bin/bash", "/usr/bin/sh"]), program=programs, args=plain_args,
       then=programs)
def test_code_given_to_a_shell_is_read_as_lines_of_its_own(shell, program, args, then):
    inner = " ".join([program, *args]) + " && " + then
    seen = read_line(f"{shell} -c {shlex.quote(inner)}")
    argvs = [i.argv for i in seen.invocations]
    assert (program, *args) in argvs and (then,) in argvs
    assert any(i.via and i.via[-1] == f"{shell.rsplit('/', 1)[-1]} -c" for i in seen.invocations
               if i.argv == (then,)) or any("-c" in step for i in seen.invocations for step in i.via)


def test_the_swe_agent_reader_splits_editor_actions_with_the_same_parser():
    from observations.replay.readers.swe_agent import _from_action

    tool, arguments = _from_action("str_replace_editor view /repo/a.py --view_range 3 9")
    assert (tool, arguments) == ("str_replace_editor", {"command": "view", "path": "/repo/a.py", "view_range": [3, 9]})
    assert _from_action("str_replace_editor view 'unclosed")[1] == {"_raw": "str_replace_editor view 'unclosed"}
