"""What every wire format the endpoint speaks provides, and the pieces they share.

A `WireFormat` is one module (``openai_chat``, ``anthropic_messages``,
``openai_responses``): the request
checks, the translation of a request into the gateway's neutral ``Request`` and of a
``ModelTurn`` back into a response or a stream, the error bodies its SDK reads, its model
list, the parameter tables ``endpoint.params`` decides with, and how the official
SDK relays a request to an upstream of the same format. Plain Python, no Django; the SDK
is imported by the format's module.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.providers.toolcalls import arguments_text
from endpoint.formats.events import TurnEvents, new_id, sse_data, sse_event
from endpoint.wire import WireError
from observations.gateway.messages import NO_PARAMS, ModelTurn, Params, Request, TurnDelta

Default = Callable[[Any], bool]  # True: the value asks for nothing beyond the default


def never(value: Any) -> bool:
    return False


@dataclass(frozen=True)
class ParamRules:
    """How ``endpoint.params`` treats a client's fields of this format."""

    handled: frozenset[str]  # read elsewhere: the request's shape, stream, output limit
    translated: frozenset[str]  # into neutral Params, for either provider
    unserved: Mapping[str, tuple[Default, str]]  # refused on every path unless at their default, with why
    untranslatable: Mapping[str, Default]  # change the answer, no word for them in the other provider
    gateways_own: frozenset[str]  # decided by the gateway when it makes the call: ignored and named
    converted: frozenset[str]  # the answer's schema and the effort, said in the other provider's words
    temperature_max: float  # the range an upstream of this format takes


class WireFormat(ABC):
    """One wire format. ``name`` is the client's format and the provider kind whose
    upstreams speak it (``Format``)."""

    name: str
    provider_words: str  # "an OpenAI": "this key's agent runs <provider_words> model"
    rules: ParamRules
    forwarded_headers: tuple[str, ...] = ()  # client request headers passed to the upstream
    bearer_first: bool = True  # the key as ``Authorization: Bearer`` before ``x-api-key``
    challenge: str | None = None  # a 401's WWW-Authenticate
    claiming_headers: tuple[str, ...] = ()  # request headers only this format's clients send (a GET names no format)
    efforts: tuple[str, ...] | None = None  # the reasoning efforts an upstream takes; None: it checks them

    # --- the request -------------------------------------------------------------------
    def forwarded(self, headers: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        """The client's request headers that go to an upstream of its own format when the
        gateway makes the call, and what of them it leaves out (named as ignored)."""
        return {name: headers[name] for name in self.forwarded_headers if name in headers}, ()

    @abstractmethod
    def check(self, body: Mapping[str, Any]) -> None:
        """Raise WireError naming the first field the endpoint or the upstream cannot take."""
        ...

    @abstractmethod
    def request(self, body: dict[str, Any], model: str, params: Params = NO_PARAMS) -> Request:
        """The (checked) body as a neutral Request for ``model``, with the settings
        ``endpoint.params`` decided for it."""
        ...

    @abstractmethod
    def params(self, body: Mapping[str, Any]) -> Params:
        """The settings every provider has a word for (``rules.translated``)."""
        ...

    @abstractmethod
    def converted(self, params: Params, body: Mapping[str, Any], upstream: WireFormat, model: str) -> Params:
        """``params`` with the answer's schema and the effort, for an ``upstream`` of
        another format (its ``model``), in neutral words."""
        ...

    def conversation_id(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
        """The client's own name for its conversation, where its format carries one."""
        return None

    def dropped(self, body: Mapping[str, Any], upstream: WireFormat, model: str) -> tuple[str, ...]:
        """Parts of the request the gateway leaves out for an ``upstream`` of that
        format (its ``model``): below its fields, or a converted field with no
        counterpart there (named in the response's ignored-parameters header with the
        fields)."""
        return ()

    @abstractmethod
    def tool_names(self, tools: list[dict[str, Any]]) -> set[str | None]:
        ...

    # --- the answer --------------------------------------------------------------------
    @abstractmethod
    def response(self, turn: ModelTurn, model: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``turn`` as the client's SDK reads a whole response to the request ``body``."""
        ...

    @abstractmethod
    def events(self, model: str, body: Mapping[str, Any]) -> TurnEvents:
        """The events of a stream answering ``body``, written as the turn's pieces come."""
        ...

    def stream(self, turn: ModelTurn, model: str, body: Mapping[str, Any] | None = None) -> list[bytes]:
        """``turn``, arrived whole, as the events of a stream: the pieces it would have
        streamed as (its text, then each call's start and arguments)."""
        events = self.events(model, body or {})
        pieces = [_thinking_piece(json.loads(block)) for block in turn.thinking]
        pieces += [TurnDelta(text=turn.text)] if turn.text else []
        for index, call in enumerate(turn.tool_calls):
            pieces += [TurnDelta(call=index, call_id=call.id, name=call.name),
                       TurnDelta(call=index, text=arguments_text(call.arguments))]
        return [*events.opening(), *(chunk for piece in pieces for chunk in events.piece(piece)),
                *events.closing(turn)]

    @abstractmethod
    def error_body(self, error: WireError) -> dict[str, Any]:
        """The body the SDK reads its error from (``APIStatusError.message``, ``.body``)."""
        ...

    @abstractmethod
    def sse_error(self, error: WireError) -> bytes:
        """An error after the stream's headers went out, as the event the SDK raises from."""
        ...

    @abstractmethod
    def models(self, model: str, *, created: int) -> dict[str, Any]:
        """The one model a key reaches, as the SDK lists models."""
        ...

    # --- the pass-through (a client of the upstream's own format): only the formats an
    # upstream speaks (``of_provider``) define these ------------------------------------
    sdk: Any  # the official SDK's module
    withheld_also: tuple[str, ...] = ()  # the SDK's environment headers kept from a profile's own URL

    def async_client_class(self) -> Any:
        raise self._no_upstream()

    def relay_call(self, client: Any, *, model: str, body: dict[str, Any], extra_headers: dict[str, str],
                   timeout: float) -> Any:
        """The SDK's streaming-response context for ``body`` with the profile's model."""
        raise self._no_upstream()

    def answer_shaped(self, answer: dict[str, Any]) -> bool:
        """Whether a whole answer is this format's response (not another service's page)."""
        raise self._no_upstream()

    def rebuilt_error(self, fields: dict[str, str]) -> dict[str, Any]:
        """An upstream's error rebuilt from its known fields, in this format's shape."""
        raise self._no_upstream()

    def _no_upstream(self) -> TypeError:
        return TypeError(f"no upstream speaks {self.name}: its clients are translated (of_provider)")


# Reading a client's setting, refused with the field named when it is not what it must be.
def strings(value: Any, name: str, words: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise WireError(f"{name}: must be {words}.", param=name)
    return tuple(value)


def string(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise WireError(f"{name}: must be a string.", param=name)
    return value or None


def number(body: Mapping[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise WireError(f"{name}: must be a number.", param=name)
    return value


def boolean(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise WireError(f"{name}: must be a boolean.", param=name)
    return value


def _thinking_piece(block: dict[str, Any]) -> TurnDelta:
    if block.get("type") == "redacted_thinking":
        return TurnDelta(redacted=block.get("data", ""))
    return TurnDelta(thinking=block.get("thinking", ""), signature=block.get("signature", ""))


__all__ = ["ParamRules", "TurnEvents", "WireFormat", "boolean", "never", "new_id", "number", "sse_data", "sse_event",
           "string", "strings"]
