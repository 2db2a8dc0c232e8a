"""End-of-turn nudges: things a careful reviewer would say before accepting "done"."""

from __future__ import annotations

import re

UNCHECKED = "unchecked"
PROMISE = "promise"
EMPTY = "empty"

# A reply that ends by announcing more work ("Next, I'll run the tests.") is not an end.
_PROMISE = re.compile(
    r"\b(next,? i(?:'ll| will)|i(?:'ll| will) (?:now|next|then)|let me (?:now )?(?:run|check|fix|look|try|add|update)"
    r"|now i(?:'ll| will)|i am going to|i'm going to)\b[^.!?\n]*[.!?]?\s*$",
    re.IGNORECASE,
)

NUDGE_TEXT = {
    EMPTY: (
        "Your last answer was empty: no text and no tool call. Go on with the task using tool calls, "
        "or reply with a final summary if it is done."
    ),
    UNCHECKED: (
        "You changed files but ran no command since. Run the project's tests or another check "
        "before finishing, or say why none applies."
    ),
    PROMISE: (
        "Your last message announces more work. Do it now with tool calls, or reply with a final "
        "summary if the task is done."
    ),
}


def promises_more(text: str) -> bool:
    tail = text.strip()[-300:]
    return bool(tail) and bool(_PROMISE.search(tail))


def empty_again(reply: str, *, told: str) -> bool:
    """An empty answer (no text, no tool call) right after the nudge for one (``told``:
    the message the model answered): the session fails rather than end "succeeded" on
    nothing."""
    return not reply.strip() and told == NUDGE_TEXT[EMPTY]


def nudge_for(*, reply: str, wrote_files: bool, nudged: list[str]) -> str | None:
    """The nudge this final reply earns: an empty answer's each time, the others at most
    once per session."""
    if not reply.strip():
        return EMPTY
    if wrote_files and UNCHECKED not in nudged:
        return UNCHECKED
    if promises_more(reply) and PROMISE not in nudged:
        return PROMISE
    return None
