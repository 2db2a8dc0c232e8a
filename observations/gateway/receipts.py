"""The texts that stand in for tool results that are not served whole.

A receipt says honestly that the text is no longer in the context and how to get it
back: `recall` with the reference it shows returns the exact bytes from the store
(for any tool, also a command that cannot be run again); for a read, reading again
returns the current text. Nothing in it forbids or discourages reading again. None of
these texts holds a timestamp, counter or random id, so they keep the prefix stable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from observations.gateway.transcript import Observation, ObservationInput

_FIRST_LINE_MAX = 80
PURPOSE_MAX = 200  # characters of a call's arguments in its purpose
# Lines that only wrap an output and say nothing about it: mini-swe-agent's
# <returncode>/<output> tags, SWE-agent's OBSERVATION:, OpenHands' banners, blank lines.
_WRAPPER = re.compile(
    r"^\s*(?:</?[A-Za-z_][\w-]*>(?:\d+</[A-Za-z_][\w-]*>)?|OBSERVATION:?|EXECUTION RESULT.*|"
    r"\[?Python Interpreter.*|Here's the result of running `cat -n`.*|-+|=+|```\w*)?\s*$"
)
_LEADING_TAGS = re.compile(r"^(?:\s*</?[A-Za-z_][\w-]*>)+")


def ref_of(sha256: str) -> str:
    """The short reference a receipt shows: the first 12 hex digits of the text's SHA-256."""
    return sha256[:12]


def call_purpose(tool: str, arguments: Mapping[str, Any] | Any) -> str:
    """What a result of a tool nobody here wrote was for: the call, name and arguments.
    The one naming of the gateway endpoint (a client's calls) and of the replay (a
    recorded agent's), so the evaluator's receipts are the ones the endpoint sends."""
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > PURPOSE_MAX:
        text = text[: PURPOSE_MAX - 1] + "…"
    return f"{tool} {text}"


def meaningful_first_line(text: str) -> str:
    """The first line that says something about the text, not a wrapper around it."""
    for line in text.splitlines():
        if _WRAPPER.match(line):
            continue
        line = _LEADING_TAGS.sub("", line).strip()
        if line:
            return _clip(line)
    return ""


def _clip(line: str) -> str:
    return line if len(line) <= _FIRST_LINE_MAX else line[: _FIRST_LINE_MAX - 1] + "…"


def _label(src: ObservationInput) -> str:
    # The range is printed once: a read's purpose already is its tool and range.
    if src.read is not None:
        return f"{src.tool} {src.read.describe()}"
    return src.purpose or src.tool


def _first(src: ObservationInput) -> str:
    line = _clip(src.first_line) if src.first_line else meaningful_first_line(src.text)
    return f" First line: {line!r}." if line else ""


def render_receipt(obs: Observation) -> str:
    # One short paragraph: receipts stay for the rest of the segment, so every token
    # here is paid on every later request. The ref makes it true for any tool: the
    # exact bytes are in the store, also for a command that cannot be run again.
    src = obs.source
    ref = ref_of(src.sha256)
    again = "; reading the file again returns its current text" if src.read is not None else ""
    return (
        f"[receipt {ref}] {_label(src)}: {src.size:,} bytes ({src.tokens:,} tokens), not in the context "
        f"any more.{_first(src)} recall(\"{ref}\") returns the exact text{again}."
    )


def render_too_large(obs: Observation) -> str:
    """A fresh result that cannot fit into the window even after a reset."""
    src = obs.source
    ref = ref_of(src.sha256)
    return (
        f"[receipt {ref}] {_label(src)}: {src.size:,} bytes ({src.tokens:,} tokens), too large for the "
        f"context window, so it was not put in.{_first(src)} recall(\"{ref}\", start_line, end_line) "
        "returns it in parts."
    )


def render_note(obs: Observation, earlier: Observation) -> str:
    """A re-read answered by pointing at a result that is still in this request."""
    rng = obs.source.read.describe() if obs.source.read else obs.source.tool
    return (
        f"[unchanged] {rng} has the same content as the result of call {earlier.call_id} "
        f"(step {earlier.step}), which is still above in this conversation."
    )


def render_alias_receipt(obs: Observation) -> str:
    """A note whose target was folded out: the text is not in context any more either."""
    rng = obs.source.read.describe() if obs.source.read else obs.source.tool
    ref = ref_of(obs.source.sha256)
    return (
        f"[receipt {ref}] {rng} is not in the context any more. recall(\"{ref}\") returns the exact "
        "text; reading the file again returns its current text."
    )


def render_payload_receipt(*, ref: str, what: str, path: str, size: int, text: str = "") -> str:
    """What stands in an old tool call for a body the agent wrote, or in an old turn
    for its reasoning."""
    if what == "reasoning":
        began = meaningful_first_line(text)
        return (f"[your earlier reasoning, {size:,} bytes, is not in the context"
                + (f"; it began {began!r}" if began else "") + f"; recall(\"{ref}\") returns it]")
    where = f" of {path}" if path else ""
    see = f"read {path} for its current text or " if path else ""
    return f"[payload {ref}: {what}{where}, {size:,} bytes, not in the context; {see}recall(\"{ref}\") returns it]"


def render_intent_block(intent_text: str, intent_path: str) -> str:
    return (
        f"# Task intent (from {intent_path}; this file is authoritative and wins over "
        "anything else in this conversation)\n\n" + intent_text
    )


def render_intent_update(intent_text: str, intent_path: str, reason: str) -> str:
    why = "A person changed" if reason == "changed" else "The file on disk disagrees with"
    return (
        f"# Task intent updated ({why} {intent_path}). This version replaces every earlier "
        "one:\n\n" + intent_text
    )


INTENT_UPDATE_FOLDED = "[intent update: the current version is the intent block at the top]"
