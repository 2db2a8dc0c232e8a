"""The wire formats a client may speak to the gateway endpoint, one module each and one
row in `FORMATS`: a new format is a module (a `WireFormat`) and its row here, plus its
route in ``endpoint/urls.py``.

Each translates between its wire shapes and the gateway's neutral ones
(``observations.gateway.messages``): a client's request as a ``Request``, a ``ModelTurn``
as the client's response, whole or as the events of a stream. That lets a key's agent
answer a client of the other provider's format (the request goes upstream through the
profile's own provider, as Atrium's sessions call it) and takes a stateless client's
history into a session. Only what the neutral shapes hold translates: text, tool calls,
tool results and thinking blocks (carried as the provider gave them, to that provider
only); images, documents and audio are refused with a 400 naming the part (passed
through, they would be dropped silently).

A format's name may also be the provider kind whose upstreams speak it (``openai:``
models answer Chat Completions, ``anthropic:`` models Messages): `of_provider` is the
format an upstream's rules (its temperature range, its words) are read from. A client of
a format no upstream speaks (the Responses API) is always translated.
"""

from __future__ import annotations

from endpoint.formats.anthropic_messages import ANTHROPIC_MESSAGES
from endpoint.formats.base import WireFormat
from endpoint.formats.openai_chat import OPENAI_CHAT
from endpoint.formats.openai_responses import OPENAI_RESPONSES

FORMATS: dict[str, WireFormat] = {wire_format.name: wire_format for wire_format in (OPENAI_CHAT, ANTHROPIC_MESSAGES,
                                                                                  OPENAI_RESPONSES)}
DEFAULT_FORMAT = OPENAI_CHAT.name  # a request no format's headers claim (the most common clients')


def of_provider(kind: str) -> WireFormat:
    return FORMATS[kind]


__all__ = ["DEFAULT_FORMAT", "FORMATS", "WireFormat", "of_provider"]
