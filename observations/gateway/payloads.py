"""The agent's own payloads: what it wrote that a fold may receipt once it is acted on.

A payload is the body of a file written (``write_file``'s content, an editor's
``file_text``), an edit's old/new text, a heredoc body inside a shell command (or a
long command without one), or the same inside a tool call written in the assistant
text (mini-swe-agent's fenced bash block, SWE-agent's ``<parameter=…>`` calls); and the agent's reasoning around them, 400
bytes or more. Once acted on, the bytes are on disk or in the store; the context only
needs to say what was written where (and what the reasoning began with). Short
arguments stay verbatim, and so does everything people wrote and what the agent posted
to them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from observations.gateway.messages import ToolCall
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import ObsState

# Below this a receipt (about 60 tokens) saves too little to be worth breaking the cache.
MIN_PAYLOAD_BYTES = 400

# Arguments that name things rather than carry bodies: never payloads.
_NAME_KEYS = frozenset({
    "path", "file", "filename", "file_path", "pattern", "glob", "query", "url", "ref", "call_id",
    "handles", "handle", "start", "end", "view_range", "purpose", "name",
})
# Arguments holding a shell line: its heredoc bodies leave (the line stays readable), or
# the whole line when it is long and has none.
_COMMAND_KEYS = frozenset({"command", "cmd", "script"})
# SWE-agent's XML-style calls written in the text.
_XML_PAYLOAD = re.compile(
    r"<parameter=(file_text|new_str|old_str|content|new_string|old_string|text)>\n?(.*?)</parameter>", re.S
)
_XML_PATH = re.compile(r"<parameter=path>\s*([^<\n]+?)\s*</parameter>")
# A command written in the text (mini-swe-agent's action): a fenced block.
_FENCED = re.compile(r"```[A-Za-z]*\n(.*?)```", re.S)
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_REDIRECT = re.compile(r"(?:>>?|\btee(?:\s+-a)?)\s*(['\"]?)([^\s'\";&|<>]+)\1")


@dataclass(frozen=True, slots=True)
class PayloadSpec:
    """Where one payload sits in an assistant turn, as found."""

    call_index: int  # index into the turn's tool calls; -1: the turn's text
    key: str  # the argument holding it ("" for the text)
    start: int  # character span inside that string
    end: int
    text: str
    path: str  # where it was written, when the call says so
    what: str  # "file body", "new text", "heredoc body", ...


@dataclass(slots=True)
class Payload:
    """A payload inside one session's transcript; evictable like a consumed result."""

    pid: int
    step: int
    entry_index: int
    spec: PayloadSpec
    sha256: str
    size: int
    tokens: int
    state: ObsState = ObsState.FRESH
    fold: int | None = None
    gain: int = 0

    @property
    def ref(self) -> str:
        return self.sha256[:12]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# What the agent says to people (a question, an answer) stays verbatim, as what people
# write does: a conversation is part of the working set.
_TO_PEOPLE = frozenset({"post_message"})


def find_payloads(text: str, tool_calls: tuple[ToolCall, ...]) -> list[PayloadSpec]:
    """Every payload of one assistant turn, in message order, none overlapping."""
    found = _in_text(text)
    for index, call in enumerate(tool_calls):
        if isinstance(call.arguments, dict) and call.name not in _TO_PEOPLE:
            found += _in_arguments(index, call.arguments)
    return found


def _in_arguments(index: int, arguments: dict[str, Any]) -> list[PayloadSpec]:
    path = next((str(arguments[k]) for k in ("path", "file_path", "filename") if isinstance(arguments.get(k), str)), "")
    found = []
    for key in sorted(arguments):
        value = arguments[key]
        if not isinstance(value, str) or key in _NAME_KEYS:
            continue
        if key in _COMMAND_KEYS:
            heredocs = _heredocs(value, index, key)
            if heredocs:
                found += heredocs
            elif len(value.encode()) >= MIN_PAYLOAD_BYTES:
                found.append(PayloadSpec(index, key, 0, len(value), value, "", "command"))
            continue
        if len(value.encode()) >= MIN_PAYLOAD_BYTES:
            found.append(PayloadSpec(index, key, 0, len(value), value, path, _describe_key(key)))
    return found


def _in_text(text: str) -> list[PayloadSpec]:
    found = _heredocs(text, -1, "")
    # A long command in a fenced block, outside any heredoc: the whole block body.
    for match in _FENCED.finditer(text):
        start, end = match.span(1)
        body = match.group(1)
        if len(body.encode()) >= MIN_PAYLOAD_BYTES and not any(p.start < end and start < p.end for p in found):
            found.append(PayloadSpec(-1, "", start, end, body, "", "command"))
    taken = [(p.start, p.end) for p in found]
    for match in _XML_PAYLOAD.finditer(text):
        start, end = match.span(2)
        body = match.group(2)
        if len(body.encode()) < MIN_PAYLOAD_BYTES or any(s < end and start < e for s, e in taken):
            continue
        # The path parameter of the same function call, written before or after the body.
        call_start = text.rfind("<function=", 0, start)
        call_end = text.find("</function>", end)
        block = text[call_start if call_start >= 0 else 0 : call_end if call_end >= 0 else len(text)]
        path_match = _XML_PATH.search(block)
        found.append(PayloadSpec(-1, "", start, end, body, path_match.group(1) if path_match else "",
                                 _describe_key(match.group(1))))
    found.sort(key=lambda p: p.start)
    # The prose around them: the agent's reasoning, which it has acted on by the time
    # a fold may take it (a fold keeps the last two turns: view.PolicyView.is_hot).
    cuts = [0] + [x for p in found for x in (p.start, p.end)] + [len(text)]
    for start, end in zip(cuts[::2], cuts[1::2], strict=True):
        if len(text[start:end].encode()) >= MIN_PAYLOAD_BYTES:
            found.append(PayloadSpec(-1, "", start, end, text[start:end], "", "reasoning"))
    return sorted(found, key=lambda p: p.start)


def _heredocs(text: str, index: int, key: str) -> list[PayloadSpec]:
    found = []
    position = 0
    while (match := _HEREDOC.search(text, position)) is not None:
        delimiter = match.group(2)
        newline = text.find("\n", match.end())
        if newline < 0:
            break
        body_start = newline + 1
        closing = re.compile(rf"^[ \t]*{re.escape(delimiter)}[ \t]*$", re.M).search(text, body_start)
        if closing is None:
            break
        body_end = closing.start()
        # The body's own trailing newline stays outside the span, so the delimiter line
        # keeps its place.
        if body_end > body_start and text[body_end - 1] == "\n":
            body_end -= 1
        body = text[body_start:body_end]
        if len(body.encode()) >= MIN_PAYLOAD_BYTES:
            line = text[text.rfind("\n", 0, match.start()) + 1 : newline]
            found.append(PayloadSpec(index, key, body_start, body_end, body, _redirect_target(line, match.group(0)),
                                     "heredoc body"))
        position = closing.end()
    return found


def _redirect_target(line: str, heredoc: str) -> str:
    """The file a heredoc line writes to (`cat > f <<EOF`, `cat <<EOF > f`, `tee f`)."""
    target = _REDIRECT.search(line.replace(heredoc, " ", 1))
    return target.group(2) if target else ""


def _describe_key(key: str) -> str:
    return {
        "content": "file body", "file_text": "file body", "text": "text",
        "new_str": "new text", "new_string": "new text", "new": "new text",
        "old_str": "replaced text", "old_string": "replaced text", "old": "replaced text",
    }.get(key, f"{key} argument")


def payload_gain(spec: PayloadSpec, receipt: str) -> int:
    """Tokens a receipt frees: arguments are sent JSON-encoded, text as it is."""
    if spec.call_index < 0:
        return estimate_tokens(spec.text) - estimate_tokens(receipt)
    return estimate_tokens(json.dumps(spec.text, ensure_ascii=False)) - estimate_tokens(
        json.dumps(receipt, ensure_ascii=False)
    )


def apply_receipts(
    text: str, tool_calls: tuple[ToolCall, ...], receipted: list[tuple[PayloadSpec, str]]
) -> tuple[str, tuple[ToolCall, ...]]:
    """The turn as sent once these payloads are receipted. Arguments stay JSON objects
    with the same keys, so tool-call/result pairs stay valid for every provider."""
    if not receipted:
        return text, tool_calls
    by_target: dict[tuple[int, str], list[tuple[PayloadSpec, str]]] = {}
    for spec, receipt in receipted:
        by_target.setdefault((spec.call_index, spec.key), []).append((spec, receipt))
    text = _splice(text, by_target.pop((-1, ""), []))
    calls = list(tool_calls)
    for (index, key), items in by_target.items():
        call = calls[index]
        arguments = dict(call.arguments)
        arguments[key] = _splice(arguments[key], items)
        calls[index] = ToolCall(call.id, call.name, arguments)
    return text, tuple(calls)


def _splice(value: str, items: list[tuple[PayloadSpec, str]]) -> str:
    ordered = sorted(items, key=lambda item: item[0].start)
    for (before, _), (after, _) in zip(ordered, ordered[1:], strict=False):
        if after.start < before.end:
            raise ValueError(f"payload spans overlap: {before.start}-{before.end} and {after.start}-{after.end}")
    for spec, receipt in reversed(ordered):
        value = value[: spec.start] + receipt + value[spec.end :]
    return value
