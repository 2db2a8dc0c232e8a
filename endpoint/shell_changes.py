"""What a client's shell call changed in its files, inferred from the call itself (the
client ran it on its own machine): in the order its commands ran, the last word on each
path kept, so ``git checkout f && sed -i … f`` leaves ``f`` written and ``echo x > t;
rm t`` leaves ``t`` removed.

- written: a redirection, ``sed -i`` and the other writes the replay's reader knows
  (``shell_accesses``), and the paths a Python script names for writing
  (``python_writes``): code on the line (``-c``), on standard input (a here-document, or
  one ``cat`` pipes in), or a script a here-document wrote, earlier in the command or in
  one of the session's earlier calls (the agents' ``cat <<'EOF' > apply_fix.py`` then
  ``python apply_fix.py``);
- deleted: ``rm`` of plain paths (a folder's path stands for what is under it);
- restored: ``git checkout [HEAD] [--] <paths>`` and ``git restore <paths>``, which put
  back what the index holds (HEAD's, unless the client staged the file).

Exact or nothing: no glob, no variable, no here-document bash would expand, no command
that failed; paths keyed as ``shell_calls`` keys reads.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence

from endpoint.shell_calls import CLIENT_CWD, SCOPE, shell_command, shown_output
from observations.gateway.messages import ToolCall
from observations.replay.actions import cd_target, is_cd
from observations.replay.commands import pipeline_accesses
from observations.shell.python_writes import python_writes
from observations.shell.syntax import Pipeline, SimpleCommand, parse_command
from observations.shell.words import Word
from sessions.runtime.file_changes import DELETED, RESTORED, WRITTEN

_PYTHON = re.compile(r"(?:\S*/)?python[0-9.]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Calls looked back through for the here-document that wrote a script: an agent runs
# what it wrote lately, and each call looked through may be parsed again.
SCRIPT_LOOKBACK = 200
_EXPANDED = re.compile(r"[$`\\]")  # what bash expands in a here-document whose delimiter is not quoted
# git restore's options that still put back the whole file from the index.
_PLAIN_RESTORE = frozenset({"-W", "--worktree", "-S", "--staged", "-q", "--quiet", "--source=HEAD", "-sHEAD"})


def shell_changes(call: ToolCall, text: str, earlier: Sequence[ToolCall] = ()) -> tuple[tuple[str, str], ...]:
    """(path, kind) for each path ``call`` changed, in the order of their last change;
    ``earlier``: the session's calls before it, oldest first."""
    changes: dict[str, str] = {}
    pipelines = list(_pipelines(call, text))
    for n, (pipeline, cwd, output) in enumerate(pipelines):
        found = [(a.path, WRITTEN) for a in pipeline_accesses(pipeline, scope=SCOPE, cwd=cwd, output=output)
                 if a.kind in ("write", "edit")]
        found += [(path, WRITTEN) for path in _script_writes(pipeline, cwd, [(p, c) for p, c, _ in pipelines[:n]],
                                                             earlier)]
        found += [(path, DELETED) for path in _removed(pipeline, cwd, output)]
        found += [(path, RESTORED) for path in _restored(pipeline, cwd, output)]
        for path, kind in found:
            changes.pop(path, None)
            changes[path] = kind
    return tuple(changes.items())


def _removed(pipeline: Pipeline, cwd: str, output: str) -> list[str]:
    """Plain paths ``rm`` removed, none the output says it could not."""
    removed = []
    for simple in pipeline:
        if simple.words and simple.words[0].text == "rm":
            removed += [SCOPE.key(word.text, cwd) for word in simple.words[1:]
                        if not word.opaque and not word.text.startswith("-")
                        and f"rm: cannot remove '{word.text}'" not in output
                        and f"refusing to remove '{word.text}'" not in output]
    return [path for path in removed if path]


def _restored(pipeline: Pipeline, cwd: str, output: str) -> list[str]:
    """What ``git checkout``/``git restore`` put back whole. A branch checked out the
    same way is named too: nothing of the session's is at a branch's name."""
    restored = []
    for simple in pipeline:
        words = simple.words
        if len(words) < 3 or words[0].text != "git" or any(w.opaque for w in words):
            continue
        paths = _restored_paths(words[1].text, [w.text for w in words[2:]])
        restored += [SCOPE.key(path, cwd) for path in paths if f"pathspec '{path}'" not in output]
    return [path for path in restored if path]


def _restored_paths(subcommand: str, rest: list[str]) -> list[str]:
    before, dashes, after = rest, False, []
    if "--" in rest:
        before, after, dashes = rest[:rest.index("--")], rest[rest.index("--") + 1:], True
    if subcommand == "checkout":
        if any(t.startswith("-") for t in before):  # -b, -p, --ours: not a whole file put back
            return []
        if not dashes:  # ``git checkout a b``: a is the commit b comes from
            before, after = before[:1] if len(before) > 1 else [], before[1:] if len(before) > 1 else before
        return after if before in ([], ["HEAD"]) else []
    if subcommand == "restore":
        options = [t for t in before if t.startswith("-")]
        staged_only = any(t in ("--staged", "-S") for t in options) and not any(
            t in ("--worktree", "-W") for t in options)
        if staged_only or any(t not in _PLAIN_RESTORE for t in options):  # -p, --ours, another --source
            return []
        return [t for t in before if not t.startswith("-")] + after
    return []


def _script_writes(pipeline: Pipeline, cwd: str, before: list[tuple[Pipeline, str | None]],
                   earlier: Sequence[ToolCall]) -> list[str]:
    written: list[str] = []
    for i, simple in enumerate(pipeline):
        source = _python_source(simple, pipeline[i - 1] if i else None)
        if isinstance(source, Word):
            key = SCOPE.key(source.text, cwd)
            source = key and _script_text(key, before, earlier)
        if source:
            written += [key for path in python_writes(source) if (key := SCOPE.key(path, cwd))]
    return written


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
    here = _here_document(simple)
    if here is None and before is not None and before.argv == ["cat"]:
        here = _here_document(before)
    return here


def _here_document(simple: SimpleCommand) -> str | None:
    """The text a command's here-document holds, None if bash would change it."""
    redirect = next((r for r in simple.redirects if r.body is not None), None)
    if redirect is None or redirect.body is None or (redirect.expands and _EXPANDED.search(redirect.body)):
        return None
    return redirect.body


def _script_text(key: str, pipelines: list[tuple[Pipeline, str | None]], earlier: Sequence[ToolCall]) -> str | None:
    """What the last here-document written to ``key`` held (``cat <<EOF > key``,
    ``tee key <<EOF``): in ``pipelines`` (this command's, each with its folder) or else
    in the last SCRIPT_LOOKBACK of the ``earlier`` calls."""
    found = _heredoc_into(key, pipelines)
    name = key.rpartition("/")[2]
    for call in reversed(earlier[-SCRIPT_LOOKBACK:]):
        if found is not None:
            break
        command = shell_command(call)
        if command and "<<" in command and name in command:
            found = _heredoc_into(key, list(_with_cwd(parse_command(command) or [])))
    return found


def _heredoc_into(key: str, pipelines: list[tuple[Pipeline, str | None]]) -> str | None:
    for pipeline, cwd in reversed(pipelines):
        for simple in reversed(pipeline):
            target = simple.stdout_target()
            if target is not None and simple.argv == ["cat"]:
                names, appends = [target.target], target.op in (">>", "&>>")
            elif simple.argv[:1] == ["tee"]:
                names = [w for w in simple.words[1:] if not w.text.startswith("-")]
                appends = any(w.text in ("-a", "--append") for w in simple.words[1:])
            else:
                continue
            if any(not w.opaque and SCOPE.key(w.text, cwd) == key for w in names):
                return None if appends else _here_document(simple)  # None: what the script holds is not known
    return None


def _pipelines(call: ToolCall, text: str) -> Iterator[tuple[Pipeline, str, str]]:
    """Each pipeline of a shell call that did not fail, with the folder it ran in (where
    that is known), and the call's output."""
    command = shell_command(call)
    output = None if command is None else shown_output(text)
    chain = None if output is None else parse_command(command)
    for pipeline, cwd in _with_cwd(chain or []):
        if cwd is not None:
            yield pipeline, cwd, output or ""


def _with_cwd(chain: list[Pipeline]) -> Iterator[tuple[Pipeline, str | None]]:
    cwd: str | None = CLIENT_CWD
    for pipeline in chain:
        if len(pipeline) == 1 and is_cd(pipeline[0]):
            cwd = cd_target(pipeline[0], SCOPE, cwd)
        else:
            yield pipeline, cwd
