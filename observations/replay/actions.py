"""Which files a tool call read, wrote, edited, listed or searched.

Shell commands (mini-swe-agent, SWE-agent ``bash``, OpenHands ``run``) are parsed by
`observations.shell.syntax` and each pipeline is recognised by
`observations.replay.commands`; file-editor calls (``str_replace_editor``, OpenHands
``read``/``edit``) are recognised from their arguments. The rule throughout is *exact or
nothing*: a read is recorded only when its path and line range are certain, so a ledger
driven by these accesses never believes the model saw text it did not see. So:

* paths with globs, variables or command substitutions are skipped, never guessed;
  ``python - <<EOF`` and ``git apply`` touch files nobody can name: nothing is recorded;
* a read whose output the agent cut before the model saw it (mini-swe-agent's elided
  middle, SWE-agent's abbreviated view, OpenHands' truncation) is not recorded; an
  editor view clipped by ``<response clipped>`` is recorded up to its last whole line;
* a view the editor refused (missing path, bad range) is not a read.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from observations.replay.commands import pipeline_accesses
from observations.replay.paths import PathScope
from observations.replay.trajectory import FileAccess, text_sha256
from observations.shell.syntax import SimpleCommand, parse_command

__all__ = ["PathScope", "call_kind", "editor_accesses", "shell_accesses"]

_EDITOR_FAILED = re.compile(
    r"^(?:OBSERVATION:\s*)?(?:ERROR:|Invalid `view_range`|The path \S+ (?:does not exist|is not))"
)
_NUMBERED_LINE = re.compile(r"^\s*(\d+)\t", re.MULTILINE)
_CLIPPED = "<response clipped>"
_ABBREVIATED = "too large to display entirely"
# Markers of output the agent cut before the model saw it: a read through it is partial.
_SHELL_TRUNCATION = (
    "<elided_chars>",
    _CLIPPED,
    "[... Command output truncated",
    "[... Observation truncated",
    '"elided_chars":',  # mini-swe-agent 2's JSON observation (mini.yaml)
)


def shell_accesses(
    command: str, *, scope: PathScope, cwd: str | None, output: str = ""
) -> tuple[FileAccess, ...]:
    """The file accesses of one shell command run in ``cwd`` (None: unknown)."""
    chain = parse_command(command)
    if chain is None:
        return ()
    found: list[FileAccess] = []
    for pipeline in chain:
        if len(pipeline) == 1 and is_cd(pipeline[0]):
            cwd = cd_target(pipeline[0], scope, cwd)
            continue
        found.extend(pipeline_accesses(pipeline, scope=scope, cwd=cwd, output=output))
    if any(marker in output for marker in _SHELL_TRUNCATION):
        found = [a for a in found if a.kind != "read"]
    return _finish(found, output)


def editor_accesses(
    arguments: Mapping[str, Any], *, scope: PathScope, output: str, cwd: str | None = None
) -> tuple[FileAccess, ...]:
    """Accesses of a ``str_replace_editor``-style call (SWE-agent, OpenHands)."""
    path = arguments.get("path")
    if not isinstance(path, str):
        return ()
    key = scope.key(path, cwd)
    if key is None:
        return ()
    command = arguments.get("command", "view")
    if command == "view":
        if "files and directories up to" in output[:300]:
            return (FileAccess("list", key),)
        if _EDITOR_FAILED.match(output) or _ABBREVIATED in output:
            return ()
        start, end = _view_range(arguments.get("view_range"))
        if _CLIPPED in output:
            # The editor cut the view short; the numbered lines before the cut were seen,
            # the last one possibly only in part.
            numbers = _NUMBERED_LINE.findall(output[: output.index(_CLIPPED)])
            end = int(numbers[-1]) - 1 if numbers else 0
            start = start or 1
            if end < start:
                return ()
        return _finish([FileAccess("read", key, start, end)], output)
    if command == "create":
        return (FileAccess("write", key),)
    if command in ("str_replace", "insert", "undo_edit", "edit"):
        return (FileAccess("edit", key),)
    return ()


def call_kind(accesses: tuple[FileAccess, ...]) -> str:
    """One word for a call, for statistics: the strongest access kind, or "other"."""
    kinds = {a.kind for a in accesses}
    for kind in ("write", "edit", "read", "search", "list"):
        if kind in kinds:
            return kind
    return "other"


def _finish(found: list[FileAccess], output: str) -> tuple[FileAccess, ...]:
    digest = text_sha256(output) if any(a.kind == "read" for a in found) else None
    unique: dict[FileAccess, None] = {}
    for access in found:
        if access.kind == "read":
            if access.start == 1 and access.end is None:
                access = replace(access, start=None)
            access = replace(access, content_hash=digest)
        unique.setdefault(access)
    return tuple(unique)


def _view_range(raw: Any) -> tuple[int | None, int | None]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None, None
    if (
        isinstance(raw, list)
        and len(raw) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
    ):
        start, end = raw
        return max(start, 1), (None if end == -1 else end)
    return None, None


def is_cd(command: SimpleCommand) -> bool:
    return bool(command.words) and command.words[0].text in ("cd", "pushd")


def cd_target(command: SimpleCommand, scope: PathScope, cwd: str | None) -> str | None:
    args = [w for w in command.words[1:] if not w.text.startswith("-") or w.text == "-"]
    if len(args) != 1 or args[0].opaque or args[0].text == "-":
        return None
    target = args[0].text
    if not target.startswith("/"):
        if cwd is None:
            return None
        target = posixpath.join(cwd, target)
    return posixpath.normpath(target)
