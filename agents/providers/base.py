"""The provider contract the step loop relies on."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from observations.gateway.messages import ModelTurn, Request


@runtime_checkable
class Provider(Protocol):
    """Answers one request with one turn, or raises a ``ProviderError`` subclass.

    ``spec`` names the endpoint (``openai:gpt-4o``). A provider sends its own model,
    not ``request.model``: a fallback endpoint must not inherit the primary's name.
    """

    spec: str

    def complete(self, request: Request) -> ModelTurn: ...
