"""The provider contract the step loop relies on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from observations.gateway.messages import ModelTurn, Request, TurnDelta

# Takes each piece of a streamed turn as it arrives; raising StreamAbandoned stops the stream.
DeltaSink = Callable[[TurnDelta], None]


@runtime_checkable
class Provider(Protocol):
    """Answers one request with one turn, or raises a ``ProviderError`` subclass.

    ``spec`` names the endpoint (``openai:gpt-4o``). A provider sends its own model,
    not ``request.model``: a fallback endpoint must not inherit the primary's name.
    """

    spec: str

    def complete(self, request: Request, on_delta: DeltaSink | None = None) -> ModelTurn:
        """``on_delta``: the turn is streamed from the upstream, each piece given to it
        as it arrives (the providers that call over the network); the turn is returned
        whole either way."""
        ...
