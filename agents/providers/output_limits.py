"""The most a model writes in one reply, as its provider publishes it: how far a client's
``max_tokens`` is honoured (a larger one the provider would refuse, or cut).

By the model's name, ``provider:`` prefix or not, newest names first where one is the
start of another; a dated or suffixed name (``claude-sonnet-4-5-20250929``,
``gpt-4.1-mini``) is its family's. Anthropic's figures are its models overview page's
"max output"; OpenAI's its model pages' "max output tokens". A model not listed here
has no known limit: the client's ``max_tokens`` goes as asked, and the provider answers.
Also which of OpenAI's models reason (``reasons``): a client's thinking becomes an effort
only for those.
"""

from __future__ import annotations

OUTPUT_LIMITS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4", 32_000),
    ("claude-sonnet-4-5", 64_000),
    ("claude-sonnet-4", 64_000),
    ("claude-haiku-4-5", 64_000),
    ("claude-3-7-sonnet", 64_000),
    ("claude-3-5-sonnet", 8_192),
    ("claude-3-5-haiku", 8_192),
    ("claude-3-haiku", 4_096),
    ("gpt-5", 128_000),
    ("gpt-4.1", 32_768),
    ("gpt-4o", 16_384),
    ("o4-mini", 100_000),
    ("o3", 100_000),
    ("o1", 100_000),
)


# OpenAI's reasoning models (their pages' "reasoning" models): the ones that take a
# reasoning effort; any other refuses one, as do these of the same families.
REASONING_FAMILIES = ("gpt-5", "o4-mini", "o3", "o1")
NOT_REASONING = ("gpt-5-chat", "o1-mini", "o1-preview")


def output_limit(model: str) -> int | None:
    return next((limit for family, limit in OUTPUT_LIMITS if _of(model, family)), None)


def reasons(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models (takes ``reasoning_effort``)."""
    return any(_of(model, family) for family in REASONING_FAMILIES) and \
        not any(_of(model, family) for family in NOT_REASONING)


def _of(model: str, family: str) -> bool:
    name = model.partition(":")[2] if ":" in model else model
    return name == family or name.startswith((f"{family}-", f"{family}."))
