"""What becomes of a client's request parameters when the gateway makes the upstream
call itself (a session's step, or a client of the other provider's format translated):
each field is carried to the upstream, said in its provider's words, or refused with the
400 that names it; none is dropped without a word. The pass-through (sessions off, the
client's own format) relays the body as it is and does not come here.

- Read elsewhere: the request's shape (``WireFormat.request``), ``stream``, ``max_tokens``.
- Translated (``Params``, either provider): ``temperature``, ``top_p``, ``stop`` /
  ``stop_sequences``, ``tool_choice`` (auto / none / required / a named tool, Anthropic's
  auto / none / any / tool), ``parallel_tool_calls`` / ``disable_parallel_tool_use``,
  ``user`` / ``metadata.user_id``; to the other provider also the answer's JSON Schema
  (``response_format`` / ``output_config.format``) and the reasoning effort. A value
  the upstream's provider does not take (a temperature above 1 for Anthropic, a JSON
  mode without a schema) is refused; an effort is checked against Anthropic's list only
  (an OpenAI upstream refuses one it does not know, and the client hears that).
- Refused on both: what the one turn the gateway answers with cannot hold (``n`` > 1,
  log probabilities, audio, a server tool's blocks). Anthropic's thinking goes to an
  Anthropic upstream as it is and is an OpenAI reasoning model's effort (``model``).
- Every other field goes as it is to an upstream of the client's own format (``seed``,
  ``response_format``, ``top_k``, a server's own extras: what the provider does with it,
  or refuses, the client hears). To the other provider: a field that changes the answer
  is refused (penalties, ``logit_bias``, ``top_k``); a hint the answer does not depend
  on (``seed``, ``service_tier``, ``store``, ``metadata``) and a field this module does
  not know are ignored, as OpenAI-compatible servers ignore what they do not know, and
  named in the response's ``X-Atrium-Ignored-Params`` header, as are the fields the
  gateway decides itself (Anthropic's ``cache_control``).

Each format's fields are its module's (``endpoint/formats/``, ``WireFormat.rules``);
a Responses API client is translated whatever the upstream. Plain Python, no Django;
docs/architecture.md has the table.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from endpoint.formats import FORMATS, WireFormat, of_provider
from endpoint.wire import Format, WireError
from observations.gateway.messages import Params

IGNORED_HEADER = "X-Atrium-Ignored-Params"
_FIELD_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Decision:
    params: Params
    ignored: tuple[str, ...] = ()  # fields not sent upstream, named in IGNORED_HEADER


def decide(fmt: Format, body: Mapping[str, Any], *, upstream: str, headers: Mapping[str, str] | None = None,
           model: str = "") -> Decision:
    """The client's (checked) ``body`` and request ``headers`` as the settings of an
    upstream call to an ``upstream`` provider's ``model``; raises WireError naming the first field
    that cannot be honoured. Each format's own tables (``WireFormat.rules``) say what its
    fields are, and which of its headers go along (``WireFormat.forwarded_headers``)."""
    client, provider = FORMATS[fmt], of_provider(upstream)
    rules = client.rules
    same = client is provider
    for name, (default, why) in rules.unserved.items():
        if body.get(name) is not None and not default(body[name]):
            raise WireError(f"{name}: not served through this gateway endpoint: {why}.", param=name)
    native, ignored = _as_they_are(body, client, provider)
    ignored += client.dropped(body, provider, model)
    params = client.params(body)
    if not same:
        params = client.converted(params, body, provider, model)
    _check_ranges(params, provider, same=same)
    _check_tool_choice(params, client, body)
    if native:
        params = dataclasses.replace(params, native={upstream: native})
    if same:
        forwarded, left_out = client.forwarded(headers or {})
        params = dataclasses.replace(params, headers=forwarded)
        ignored += left_out
    return Decision(params, tuple(sorted(ignored)))


def _as_they_are(body: Mapping[str, Any], client: WireFormat, provider: WireFormat) -> tuple[dict[str, Any], list[str]]:
    """The fields no rule reads: sent as they are (to an upstream of the client's own
    format), or ignored and named, or refused (to the other provider, what changes the
    answer)."""
    rules, same = client.rules, client is provider
    read = rules.handled | rules.translated | rules.unserved.keys()
    native: dict[str, Any] = {}
    ignored: list[str] = []
    for name, value in body.items():
        if name in read or value is None or (not same and name in rules.converted):
            continue
        if not same and not _FIELD_NAME.fullmatch(name):
            # Ignored fields are named in a response header, which takes no such name.
            raise WireError(f"{name[:40]!r}: not a field of this API.", param=name[:40])
        if name in rules.gateways_own:
            ignored.append(name)
        elif same:
            native[name] = value
        elif (default := rules.untranslatable.get(name)) is None:
            ignored.append(name)
        elif not default(value):
            raise WireError(
                f"{name}: this key's agent runs {provider.provider_words} model, which has no "
                f"`{name}`; leave it out.",
                param=name,
            )
    return native, ignored


def _check_ranges(params: Params, provider: WireFormat, *, same: bool) -> None:
    temperature_max = provider.rules.temperature_max
    if params.temperature is not None and not 0 <= params.temperature <= temperature_max:
        also = "" if same else f" (this key's agent runs {provider.provider_words} model)"
        raise WireError(f"temperature: must be between 0 and {temperature_max:g}{also}.", param="temperature")
    if params.top_p is not None and not 0 <= params.top_p <= 1:
        raise WireError("top_p: must be between 0 and 1.", param="top_p")


def _check_tool_choice(params: Params, client: WireFormat, body: Mapping[str, Any]) -> None:
    """A choice that needs a tool needs tools, and a named one among them (either
    provider refuses it otherwise; the client hears it in its own words)."""
    choice = params.tool_choice
    if choice is None or choice.mode in ("auto", "none"):
        return
    tools = body.get("tools") or ()
    if not tools:
        raise WireError(f"tool_choice: `{choice.mode}` needs `tools`.", param="tool_choice")
    if choice.mode == "tool" and choice.name not in client.tool_names(tools):
        raise WireError(f"tool_choice: no tool named {choice.name!r} in `tools`.", param="tool_choice")
