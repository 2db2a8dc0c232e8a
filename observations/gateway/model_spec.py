"""Model specs: ``openai:<model>``, ``anthropic:<model>``, ``replay:<file>``, ``script:<scenario>``.

The one parser of a spec. The provider factory (which builds the provider), the agent
profile's field validator and form, the price table and the eval command all read a
spec through ``parse_model_spec``, so a spec one of them accepts is a spec to all.
It lives with the prices, in the core, because the price table below the agents needs
it too.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("openai", "anthropic", "replay", "script")
# Kinds whose name is a file looked up in a hub folder: named, never pathed.
FILE_KINDS = frozenset({"replay", "script"})
REMOTE_KINDS = frozenset({"openai", "anthropic"})


class ModelSpecError(ValueError):
    """Not a model spec. ``code`` says why: unknown_kind, no_name, space or path."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class ModelSpec:
    kind: str
    name: str  # may hold colons itself: openai:ollama/qwen2.5-coder:7b

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def parse_model_spec(spec: str) -> ModelSpec:
    """``spec`` split into its kind and name; surrounding whitespace is ignored, any
    inside is refused (no provider's model name holds a space)."""
    text = spec.strip()
    kind, colon, name = text.partition(":")
    if not colon or kind not in KINDS:
        raise ModelSpecError(
            f"unknown model spec {spec!r}: expected openai:<model>, anthropic:<model> or replay:<file> "
            "(script:<scenario> in evals)", "unknown_kind")
    if not name.strip():
        raise ModelSpecError(f"model spec {spec!r} names no model", "no_name")
    if any(c.isspace() for c in text):
        raise ModelSpecError(f"model spec {spec!r} holds whitespace", "space")
    if kind in FILE_KINDS and ("/" in name or "\\" in name or name.startswith(".") or "\0" in name):
        raise ModelSpecError(f"{spec!r}: a {kind}: model names a file in the hub's {kind} folder, not a path",
                             "path")
    return ModelSpec(kind, name)


def model_kind(spec: str) -> str | None:
    """The kind of ``spec``, or None when it is not a spec."""
    try:
        return parse_model_spec(spec).kind
    except ModelSpecError:
        return None
