"""Token estimation without a tokenizer.

Providers count tokens their own way and no tokenizer may be downloaded at run time,
so the estimate is a linear model of what tokenizers are sensitive to: words (a letter
run is about one token unless it is very long), digits (split one by one by
SentencePiece-style tokenizers), newlines, spaces (indentation merges cheaply) and every
other byte (punctuation and non-ASCII, about 0.7 token each).

The coefficients were fitted by relative least squares on the development set's
mini-swe-agent runs, whose provider-reported ``prompt_tokens`` at each call is the true
size of the full history (Gemini 3 Pro's tokenizer, 4,135 calls), with the message
overhead fixed at 4 tokens: median error 1.4%, p95 4.6% there; fitted on half the runs,
1.5–1.7% / 4.8–5.1% on the other half (the byte model before it: 5.6% / 15%). The
replay reports 1.5% / 5.0% because its requests also carry a tool-call name per step.
`python manage.py replay` reports the error on whatever it replays; docs/replay.md has
the method. Other tokenizers differ (most merge digits in threes), which per-model
calibration (budget.Calibration) corrects from the provider's own counts.
"""

from __future__ import annotations

import json

from observations.gateway.messages import Message, Request


def _class_table() -> bytes:
    """Every byte mapped to its class: Letter, Digit, Space, Newline or Other."""
    table = bytearray(b"O" * 256)  # punctuation, symbols, non-ASCII bytes
    for first, last, mark in ((b"A", b"Z", b"L"), (b"a", b"z", b"L"), (b"0", b"9", b"D")):
        table[first[0] : last[0] + 1] = mark * (last[0] - first[0] + 1)
    for byte in b" \t":
        table[byte] = ord("S")
    for byte in b"\n\r":
        table[byte] = ord("N")
    return bytes(table)


_CLASSES = _class_table()
_WORD_STARTS = (b"DL", b"SL", b"NL", b"OL")  # a letter after a non-letter
_LONG_RUN = b"L" * 16

# Tokens per unit, in millionths.
WORD_PPM = 885_000
# A letter run costs more than one token once it is long (CamelCase names, base64, a
# blob of one letter): 4 more per full 16 letters. The data cannot pin this (such runs
# are rare there), so it is a fixed prior: about 4 letters per token, a subword's size.
LONG_RUN_PPM = 4_000_000
DIGIT_PPM = 1_418_000
SPACE_PPM = 99_000
NEWLINE_PPM = 1_356_000
OTHER_PPM = 710_000  # punctuation, symbols and non-ASCII bytes
MESSAGE_OVERHEAD = 4  # role markers and separators per message


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (never 0 for non-empty text)."""
    if not text:
        return 0
    classes = text.encode("utf-8", "surrogatepass").translate(_CLASSES)
    letters = classes.count(b"L")
    digits = classes.count(b"D")
    spaces = classes.count(b"S")
    newlines = classes.count(b"N")
    other = len(classes) - letters - digits - spaces - newlines
    words = long_runs = 0
    if letters:
        words = (classes[0] == ord("L")) + sum(classes.count(start) for start in _WORD_STARTS)
        long_runs = classes.count(_LONG_RUN)
    return (
        WORD_PPM * words
        + LONG_RUN_PPM * long_runs
        + DIGIT_PPM * digits
        + SPACE_PPM * spaces
        + NEWLINE_PPM * newlines
        + OTHER_PPM * other
    ) // 1_000_000 + 1


def estimate_message_tokens(text: str) -> int:
    return estimate_tokens(text) + MESSAGE_OVERHEAD


def estimate_header(system: str, tools) -> int:
    """A request's system prompt and tool schemas."""
    return estimate_tokens(system) + sum(estimate_tokens(t.name + t.description + str(t.parameters)) for t in tools)


def estimate_request(request: Request) -> int:
    """The whole of ``request`` as sent (a client's ``count_tokens``)."""
    return estimate_header(request.system, request.tools) + sum(estimate_request_message(m) for m in request.messages)


def estimate_request_message(message: Message) -> int:
    """A message as sent: its text, plus the name and arguments of each native tool call."""
    return estimate_message_tokens(message.text) + sum(
        estimate_tokens(call.name + json.dumps(call.arguments, ensure_ascii=False, sort_keys=True))
        for call in message.tool_calls
    )
