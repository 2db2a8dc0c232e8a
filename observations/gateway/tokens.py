"""Token estimation without a tokenizer.

Providers count tokens their own way and no tokenizer may be downloaded at run time,
so the estimate is a linear model of UTF-8 bytes and punctuation bytes (code and JSON
are punctuation-dense and cost more tokens per byte than prose). The coefficients
were fitted on the development set's provider-reported context sizes (see
docs/replay.md); per-model calibration (budget.Calibration) corrects the rest.
"""

from __future__ import annotations

# Bytes that tokenizers merge into longer tokens: ASCII letters, digits and whitespace.
_WORDISH = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123)) + b" \t\n\r"

BYTE_WEIGHT_PPM = 225_000  # tokens per byte, in millionths
PUNCT_WEIGHT_PPM = 545_000  # extra tokens per punctuation / non-ASCII byte
MESSAGE_OVERHEAD = 6  # role markers and separators per message


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (never 0 for non-empty text)."""
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    punct = len(raw.translate(None, _WORDISH))
    return (BYTE_WEIGHT_PPM * len(raw) + PUNCT_WEIGHT_PPM * punct) // 1_000_000 + 1


def estimate_message_tokens(text: str) -> int:
    return estimate_tokens(text) + MESSAGE_OVERHEAD
