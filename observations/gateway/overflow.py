"""Recognising a provider's "prompt too long" error.

An overflow is never transient: retrying the same request fails the same way, so the
gateway must fold first (ARCHITECTURE.md, failure 3). Providers word it differently
and proxies re-wrap it, so recognition goes from the most to the least structured
evidence:

1. HTTP status: 413 (request entity too large) is an overflow; 429 never is, even
   when its text says "request too large" (that is a tokens-per-minute rate limit).
2. Machine codes anywhere in the JSON body (``code``, ``type``, ``error_code``,
   ``status``), e.g. OpenAI's ``context_length_exceeded`` or llama.cpp's
   ``exceed_context_size_error``.
3. The message text, after decoding JSON escapes (``\\u003e`` is ``>``, as Go's
   encoder writes it) and bodies that were JSON-encoded twice by a proxy.

Plain Python, no SDK imports: the providers and the offline replay evaluator share it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

# Codes that name the overflow itself. Generic codes such as ``invalid_request_error``
# say nothing on their own; those bodies fall through to the text rules.
OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure, Groq, Cerebras, newer vLLM
        "exceed_context_size_error",  # llama.cpp server
        "model_max_prompt_tokens_exceeded",  # GitHub Copilot API
        "model_context_window_exceeded",  # z.ai
        "context_window_exceeded",
        "contextwindowexceedederror",  # LiteLLM's exception name used as a code
        "request_too_large",  # Anthropic's 413 type
    }
)

# A body carrying one of these is a rate limit, whatever its text says about size.
RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "throttlingexception"})

_CODE_KEYS = frozenset({"code", "type", "error_code", "status", "reason"})

# Each pattern runs on lower-cased text with escapes decoded and whitespace collapsed.
_TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("prompt too long", r"\bprompt (?:is )?too long\b"),  # Anthropic, Ollama, Bedrock
        ("input too long", r"\binput is too long\b"),  # Bedrock
        ("context length exceeded", r"\bcontext[ _-]?(?:length|window)[ _-]?exceeded"),
        # OpenAI, DeepSeek, vLLM, Mistral, OpenRouter ("This endpoint's maximum ...").
        ("maximum context length", r"\bmaximum context length\b"),
        (
            "exceeds the context",
            # OpenAI "exceeds the context window", llama.cpp "exceeds the available context
            # size", Anthropic "input length and `max_tokens` exceed context limit".
            r"\bexceed(?:s|ed)? (?:the )?(?:available |model'?s? )?context (?:size|window|length|limit)\b",
        ),
        ("context size exceeded", r"\bcontext size (?:has been )?exceeded\b"),  # llama.cpp
        (
            "input token count exceeds",
            r"\binput token count \(?\d+\)? exceeds the maximum number of tokens\b",  # Gemini
        ),
        (
            "longer than the context",
            r"\blonger than the (?:model'?s? )?(?:maximum model length|context length)\b",  # vLLM, Together
        ),
        ("prompt token count exceeds", r"\bprompt token count of \d+ exceeds the limit\b"),
        ("tokens over maximum", r"\b\d+ tokens? > \d+ maximum\b"),  # Anthropic, needs `>` decoded
        ("greater than the context length", r"\bgreater than the context length\b"),  # LM Studio
        ("exceeded model token limit", r"\bexceeded model token limit\b"),  # Kimi
        ("configured context size", r"\bbut the configured context size is\b"),
        ("input length range", r"\brange of input length should be\b"),  # DashScope / Qwen
        (
            "request exceeds the maximum size",
            r"\brequest exceeds the maximum (?:allowed )?(?:size|number of bytes)\b",
        ),
    )
)

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\"\\/nrt])")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "r": "\r", "t": "\t"}
_MAX_DEPTH = 4


def is_context_overflow(
    *,
    status: int | None = None,
    code: str | None = None,
    body: str | Mapping[str, Any] | None = None,
) -> bool:
    """Whether an error response says the request does not fit the model's context."""
    return overflow_reason(status=status, code=code, body=body) is not None


def overflow_reason(
    *,
    status: int | None = None,
    code: str | None = None,
    body: str | Mapping[str, Any] | None = None,
) -> str | None:
    """The rule that recognised an overflow (for logs and fold records), or None."""
    if status == 429:
        return None
    if status == 413:
        return "status 413"
    codes, texts = _collect(body)
    if code:
        codes.append(code)
    normalized_codes = {c.strip().lower() for c in codes}
    if normalized_codes & RATE_LIMIT_CODES:
        return None
    matched = sorted(normalized_codes & OVERFLOW_CODES)
    if matched:
        return f"code {matched[0]}"
    text = _normalize(" ".join(texts))
    for name, pattern in _TEXT_RULES:
        if pattern.search(text):
            return f"text: {name}"
    return None


def decode_escapes(text: str) -> str:
    """Decode JSON string escapes left in text, repeatedly (double-encoded bodies)."""
    for _ in range(_MAX_DEPTH):
        decoded = _ESCAPE.sub(_unescape, text)
        if decoded == text:
            break
        text = decoded
    return text


def _unescape(match: re.Match[str]) -> str:
    token = match.group(1)
    if token[0] == "u":
        return chr(int(token[1:], 16))
    return _SIMPLE_ESCAPES[token]


def _normalize(text: str) -> str:
    return " ".join(decode_escapes(text).lower().split())


def _collect(body: str | Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """Machine codes and human text found in a body, descending into embedded JSON."""
    codes: list[str] = []
    texts: list[str] = []
    if body is None:
        return codes, texts
    for key, value in _walk(body, depth=0):
        if key in _CODE_KEYS and isinstance(value, str) and len(value) <= 80:
            codes.append(value)
        texts.append(value)
    return codes, texts


def _walk(value: Any, *, depth: int, key: str | None = None) -> Iterator[tuple[str | None, str]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk(v, depth=depth, key=str(k).lower())
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item, depth=depth, key=key)
    elif isinstance(value, str):
        embedded = _embedded_json(value) if depth < _MAX_DEPTH else None
        if embedded is not None:
            yield from _walk(embedded, depth=depth + 1, key=key)
        else:
            yield key, value


def _embedded_json(text: str) -> Any:
    """The JSON value a string holds, if it is one (a body a proxy encoded again)."""
    candidate = text.strip()
    if not candidate or candidate[0] not in '{["':
        return None
    try:
        parsed = json.loads(candidate)
    except ValueError:
        return None
    return parsed if isinstance(parsed, Mapping | list | str) else None
