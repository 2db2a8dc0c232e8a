"""The texts that stand in for tool results that are not served whole.

A receipt says honestly that the text is no longer in the context and that calling
the tool again returns it; nothing in it forbids or discourages reading again. None of
these texts holds a timestamp, counter or random id, so they keep the prefix stable.
"""

from __future__ import annotations

from observations.gateway.transcript import Observation, ObservationInput

_FIRST_LINE_MAX = 80


def _first_line(source: ObservationInput) -> str:
    line = source.first_line or (source.text.splitlines()[0] if source.text else "")
    return line if len(line) <= _FIRST_LINE_MAX else line[: _FIRST_LINE_MAX - 1] + "…"


def render_receipt(obs: Observation) -> str:
    # One short paragraph: receipts stay for the rest of the session, so every token
    # here is paid on every later request.
    src = obs.source
    parts = [f"purpose: {src.purpose}"] if src.purpose else []
    if src.read is not None:
        parts.append(f"range: {src.read.describe()}")
    parts.append(f"{src.size:,} bytes; sha256 {src.sha256[:16]}; first line: {_first_line(src)!r}")
    return (
        f"[receipt] This {src.tool} result is not in the context any more ({src.tokens:,} tokens removed "
        f"to make room). {'; '.join(parts)}. Calling the tool again returns the full text."
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
    return (
        f"[receipt] {rng} (sha256 {obs.source.sha256[:16]}) is not in the context any more. "
        "Calling the tool again returns the full text."
    )


def render_room_dedup_denial(obs: Observation) -> str:
    """What the deadlocking gateway answered; reproduced for comparison only."""
    rng = obs.source.read.describe() if obs.source.read else obs.source.tool
    return f"[already read] {rng} was already read in this room; its text is not repeated."


def render_mask_stub(obs: Observation) -> str:
    """SWE-agent's `last_n_observations` stub, for the replay comparison only."""
    return f"Old environment output: ({obs.source.text.count(chr(10)) + 1} lines omitted)"


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
