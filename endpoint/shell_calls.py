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

import json
import re

from observations.gateway.messages import ToolCall
from observations.gateway.transcript import FileRange
from observations.replay.actions import PathScope, shell_accesses

SHELL_TOOLS = re.compile(r"bash|shell|terminal|run|exec", re.IGNORECASE)
COMMAND_ARGUMENTS = ("command", "cmd")
# The client's working directory is not known here: a relative path is keyed as the
# client wrote it (under this stand-in root), an absolute one as it is. The same file
# named both ways is two keys: a missed note, never a wrong one.
CLIENT_CWD = "/.client-cwd"
SCOPE = PathScope(CLIENT_CWD)


def shell_command(call: ToolCall) -> str | None:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    command = next((v for k in COMMAND_ARGUMENTS if isinstance(v := arguments.get(k), str) and v.strip()), None)
    return command if command is not None and SHELL_TOOLS.search(call.name) else None


def shell_effects(call: ToolCall, text: str, sha: str) -> tuple[FileRange | None, tuple[str, ...]]:
    """The range read (``sha``: of ``text``, the whole output) and the paths written by
    ``call`` if it is a shell call; (None, ()) when it is not one or shows nothing certain."""
    command = shell_command(call)
    output = None if command is None else shown_output(text)
    if output is None:
        return None, ()
    accesses = shell_accesses(command, scope=SCOPE, cwd=CLIENT_CWD, output=output)
    reads = [a for a in accesses if a.kind == "read"]
    written = tuple(dict.fromkeys(a.path for a in accesses if a.kind in ("write", "edit")))
    if len(reads) != 1 or reads[0].is_tail:
        return None, written
    return FileRange(reads[0].path, reads[0].start, reads[0].end, sha), written


def shown_output(text: str) -> str | None:
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
