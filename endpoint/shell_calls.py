"""What a client's shell call did to files: the range its output shows and the paths it
wrote. An agent whose one tool is a shell (mini-swe-agent's ``bash``, SWE-agent's) reads
with ``cat f``, ``nl -ba f | sed -n 'a,bp'`` or ``head``, and edits with ``sed -i``; the
gateway reads those lines with the replay's reader (``shell_accesses``: one parser of
shell lines), so its ledger serves an unchanged re-read as a note and a re-read after a
fold as the text, for these agents as for one with a ``read_file`` tool.

Exact or nothing, the reader's rule: one read of one path, shown whole by the output
(two files, a glob, a filter whose effect is unknown, output the client cut: no read),
and the text is then served as it came.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence

from observations.gateway.messages import ToolCall
from observations.gateway.transcript import FileRange
from observations.replay.actions import PathScope, cd_target, is_cd, shell_accesses
from observations.shell.python_writes import python_writes
from observations.shell.syntax import Pipeline, SimpleCommand, parse_command
from observations.shell.words import Word

SHELL_TOOLS = re.compile(r"bash|shell|terminal|run|exec", re.IGNORECASE)
COMMAND_ARGUMENTS = ("command", "cmd")
# The client's working directory is not known here: a relative path is keyed as the
# client wrote it (under this stand-in root), an absolute one as it is. The same file
# named both ways is two keys: a missed note, never a wrong one.
_CWD = "/.client-cwd"
_SCOPE = PathScope(_CWD)
_PYTHON = re.compile(r"(?:\S*/)?python[0-9.]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _command(call: ToolCall) -> str | None:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    command = next((v for k in COMMAND_ARGUMENTS if isinstance(v := arguments.get(k), str) and v.strip()), None)
    return command if command is not None and SHELL_TOOLS.search(call.name) else None


def shell_effects(call: ToolCall, text: str, sha: str) -> tuple[FileRange | None, tuple[str, ...]]:
    """The range read (``sha``: of ``text``, the whole output) and the paths written by
    ``call`` if it is a shell call; (None, ()) when it is not one or shows nothing certain."""
    command = _command(call)
    output = None if command is None else _shown_output(text)
    if output is None:
        return None, ()
    accesses = shell_accesses(command, scope=_SCOPE, cwd=_CWD, output=output)
    reads = [a for a in accesses if a.kind == "read"]
    written = tuple(dict.fromkeys(a.path for a in accesses if a.kind in ("write", "edit")))
    if len(reads) != 1 or reads[0].is_tail:
        return None, written
    return FileRange(reads[0].path, reads[0].start, reads[0].end, sha), written


def shell_removals(call: ToolCall, text: str) -> tuple[str, ...]:
    """The paths ``call`` removed with ``rm``, keyed as ``shell_effects`` keys writes:
    plain paths only (no glob, no variable), none the output says ``rm`` could not
    remove, nothing from a command that failed. A folder's path stands for what was
    under it (``paths_changed`` reads it so)."""
    removed: list[str] = []
    for pipeline, cwd, output in _pipelines(call, text):
        for simple in pipeline:
            if simple.words and simple.words[0].text == "rm":
                removed += [_SCOPE.key(word.text, cwd) for word in simple.words[1:]
                            if not word.opaque and not word.text.startswith("-")
                            and f"rm: cannot remove '{word.text}'" not in output]
    return tuple(dict.fromkeys(path for path in removed if path))


def shell_restores(call: ToolCall, text: str) -> tuple[str, ...]:
    """The paths ``call`` put back as HEAD holds them: ``git checkout [HEAD] [--] <paths>``,
    ``git restore <paths>`` (the worktree's, from HEAD). A branch checked out the same
    way is named too: nothing of the session's is at a branch's name, so it changes no
    answer."""
    restored: list[str] = []
    for pipeline, cwd, output in _pipelines(call, text):
        for simple in pipeline:
            words = simple.words
            if len(words) < 3 or words[0].text != "git" or any(w.opaque for w in words):
                continue
            paths = _restored(words[1].text, [w.text for w in words[2:]])
            restored += [_SCOPE.key(path, cwd) for path in paths if f"pathspec '{path}'" not in output]
    return tuple(dict.fromkeys(path for path in restored if path))


def _restored(subcommand: str, rest: list[str]) -> list[str]:
    before, dashes, after = rest, False, []
    if "--" in rest:
        before, after, dashes = rest[:rest.index("--")], rest[rest.index("--") + 1:], True
    if subcommand == "checkout":
        if any(t.startswith("-") for t in before):  # -b, -p, --ours: not a plain restore
            return []
        if not dashes:  # ``git checkout a b``: a is the commit b comes from
            before, after = before[:1] if len(before) > 1 else [], before[1:] if len(before) > 1 else before
        return after if before in ([], ["HEAD"]) else []
    if subcommand == "restore":
        options = [t for t in before if t.startswith("-")]
        staged_only = any(t in ("--staged", "-S") for t in options) and not any(
            t in ("--worktree", "-W") for t in options)
        if staged_only or any(t.startswith(("-s", "--source")) and t not in ("-sHEAD", "--source=HEAD")
                              for t in options):
            return []
        return [t for t in before if not t.startswith("-")] + after
    return []


def script_writes(call: ToolCall, text: str, earlier: Sequence[ToolCall] = ()) -> tuple[str, ...]:
    """The paths the Python code ``call`` runs names for writing (``python_writes``),
    keyed as ``shell_effects`` keys them: code on the line (``-c``), on standard input (a
    here-document, or one ``cat`` pipes in), or in a script a here-document wrote,
    earlier in the command or in one of the session's ``earlier`` calls (oldest first):
    the agents' ``cat <<'EOF' > apply_fix.py`` then ``python apply_fix.py``."""
    written: list[str] = []
    pipelines = list(_pipelines(call, text))
    for n, (pipeline, cwd, _) in enumerate(pipelines):
        for i, simple in enumerate(pipeline):
            source = _python_source(simple, pipeline[i - 1] if i else None)
            if isinstance(source, Word):
                key = _SCOPE.key(source.text, cwd)
                source = key and _script_text(key, [(p, c) for p, c, _ in pipelines[:n]], earlier)
            if source:
                written += [key for path in python_writes(source) if (key := _SCOPE.key(path, cwd))]
    return tuple(dict.fromkeys(written))


def _python_source(simple: SimpleCommand, before: SimpleCommand | None) -> str | Word | None:
    """The code a ``python`` command runs: its text, or the word naming its script."""
    words = list(itertools.dropwhile(lambda w: _ASSIGNMENT.match(w.text), simple.words))
    if not words or not _PYTHON.fullmatch(words[0].text):
        return None
    args = iter(words[1:])
    for word in args:
        if word.opaque or word.text == "-m":
            return None
        if word.text == "-c":
            code = next(args, None)
            return code.text if code is not None and not code.opaque else None
        if word.text in ("-W", "-X"):  # an option with its value
            next(args, None)
        elif word.text == "-" or not word.text.startswith("-"):
            return word if word.text != "-" else _stdin(simple, before)
    return _stdin(simple, before)


def _stdin(simple: SimpleCommand, before: SimpleCommand | None) -> str | None:
    here = next((r.body for r in simple.redirects if r.body is not None), None)
    if here is None and before is not None and before.argv == ["cat"]:
        here = next((r.body for r in before.redirects if r.body is not None), None)
    return here


def _script_text(key: str, pipelines: list[tuple[Pipeline, str | None]], earlier: Sequence[ToolCall]) -> str | None:
    """What the last here-document written to ``key`` held (``cat <<EOF > key``,
    ``tee key <<EOF``): in ``pipelines`` (this command's, each with its folder) or else
    in ``earlier`` calls."""
    found = _heredoc_into(key, pipelines)
    name = key.rpartition("/")[2]
    for call in reversed(earlier):
        if found is not None:
            break
        command = _command(call)
        if command and "<<" in command and name in command:
            found = _heredoc_into(key, list(_with_cwd(parse_command(command) or [])))
    return found


def _heredoc_into(key: str, pipelines: list[tuple[Pipeline, str | None]]) -> str | None:
    for pipeline, cwd in reversed(pipelines):
        for simple in reversed(pipeline):
            body = next((r.body for r in simple.redirects if r.body is not None), None)
            target = simple.stdout_target()
            names = [target.target] if target is not None and target.op in (">", ">|") and simple.argv == ["cat"] \
                else simple.words[1:] if simple.argv[:1] == ["tee"] else []
            if body is not None and any(not w.opaque and _SCOPE.key(w.text, cwd) == key for w in names):
                return body
    return None


def _pipelines(call: ToolCall, text: str) -> Iterator[tuple[Pipeline, str, str]]:
    """Each pipeline of a shell call that did not fail, with the folder it ran in where
    that is known, and the call's output."""
    command = _command(call)
    output = None if command is None else _shown_output(text)
    chain = None if output is None else parse_command(command)
    for pipeline, cwd in _with_cwd(chain or []):
        if cwd is not None:
            yield pipeline, cwd, output or ""


def _with_cwd(chain: list[Pipeline]) -> Iterator[tuple[Pipeline, str | None]]:
    cwd: str | None = _CWD
    for pipeline in chain:
        if len(pipeline) == 1 and is_cd(pipeline[0]):
            cwd = cd_target(pipeline[0], _SCOPE, cwd)
        else:
            yield pipeline, cwd


def _shown_output(text: str) -> str | None:
    """The command's output in ``text``: mini-swe-agent 2 sends a JSON object (its
    ``returncode`` and ``output``), whose output the reader must see unescaped to find a
    "No such file" line; a command that failed shows no certain read (None)."""
    if not text.startswith("{"):
        return text
    try:
        shown = json.loads(text)
    except ValueError:
        return text
    if not isinstance(shown, dict) or not isinstance(shown.get("output"), str):
        return text
    if shown.get("returncode") not in (0, None):
        return None
    return shown["output"]
