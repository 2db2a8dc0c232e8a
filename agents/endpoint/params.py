"""What becomes of a client's request parameters when the gateway makes the upstream
call itself (a session's step, or a client of the other provider's format translated):
each field is carried to the upstream, said in its provider's words, or refused with the
400 that names it; none is dropped without a word. The pass-through (sessions off, the
client's own format) relays the body as it is and does not come here.

- Read elsewhere: the request's shape (``translate``), ``stream``, ``max_tokens``.
- Translated (``Params``, either provider): ``temperature``, ``top_p``, ``stop`` /
  ``stop_sequences``, ``tool_choice`` (auto / none / required / a named tool, Anthropic's
  auto / none / any / tool), ``parallel_tool_calls`` / ``disable_parallel_tool_use``,
  ``user`` / ``metadata.user_id``; to the other provider also the answer's JSON Schema
  (``response_format`` / ``output_config.format``) and the reasoning effort. A value
  the upstream's provider does not take (a temperature above 1 for Anthropic, a JSON
  mode without a schema) is refused; an effort is checked against Anthropic's list only
  (an OpenAI upstream refuses one it does not know, and the client hears that).
- Refused on both: what the one turn the gateway answers with cannot hold (``n`` > 1,
  log probabilities, audio, thinking blocks, a server tool's blocks).
- Every other field goes as it is to an upstream of the client's own format (``seed``,
  ``response_format``, ``top_k``, a server's own extras: what the provider does with it,
  or refuses, the client hears). To the other provider: a field that changes the answer
  is refused (penalties, ``logit_bias``, ``top_k``); a hint the answer does not depend
  on (``seed``, ``service_tier``, ``store``, ``metadata``) and a field this module does
  not know are ignored, as OpenAI-compatible servers ignore what they do not know, and
  named in the response's ``X-Atrium-Ignored-Params`` header, as are the fields the
  gateway decides itself (Anthropic's ``cache_control``).

Plain Python, no Django; docs/architecture.md has the table.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.endpoint.wire import Format, WireError
from observations.gateway.messages import Params, ToolChoice

IGNORED_HEADER = "X-Atrium-Ignored-Params"
_FIELD_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

_HANDLED: dict[str, frozenset[str]] = {
    "openai": frozenset(
        {
            "model",
            "messages",
            "tools",
            "stream",
            "stream_options",
            "max_tokens",
            "max_completion_tokens",
        }
    ),
    "anthropic": frozenset({"model", "messages", "system", "tools", "max_tokens", "stream"}),
}
_TRANSLATED: dict[str, frozenset[str]] = {
    "openai": frozenset(
        {"temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls", "user"}
    ),
    "anthropic": frozenset({"temperature", "top_p", "stop_sequences", "tool_choice", "metadata"}),
}

Default = Callable[[Any], bool]  # True: the value asks for nothing beyond the default


def _never(value: Any) -> bool:
    return False


# Refused on every path here, with why; a field at its default passes.
_UNSERVED: dict[str, dict[str, tuple[Default, str]]] = {
    "openai": {
        "n": (lambda v: v == 1, "the gateway answers with one choice: send 1 or leave it out"),
        "logprobs": (lambda v: v is False, "the gateway does not return log probabilities"),
        "top_logprobs": (lambda v: v == 0, "the gateway does not return log probabilities"),
        "audio": (_never, "the gateway answers in text"),
        "modalities": (lambda v: v == ["text"], "the gateway answers in text"),
        "functions": (_never, "send `tools` instead (the gateway reads tools only)"),
        "function_call": (_never, "send `tool_choice` instead (the gateway reads tools only)"),
        "web_search_options": (_never, "the gateway does not return a search's annotations"),
    },
    "anthropic": {
        "thinking": (
            lambda v: isinstance(v, dict) and v.get("type") == "disabled",
            "the gateway does not return thinking blocks",
        ),
        "mcp_servers": (_never, "the gateway does not return a server tool's blocks"),
        "container": (_never, "the gateway does not return a server tool's blocks"),
    },
}

# A client's own provider's fields that change the answer and that the other provider
# has no word for: refused when the upstream is the other provider.
_UNTRANSLATABLE: dict[str, dict[str, Default]] = {
    "openai": {
        "presence_penalty": lambda v: v == 0,
        "frequency_penalty": lambda v: v == 0,
        "logit_bias": lambda v: not v,
        "verbosity": _never,
    },
    "anthropic": {"top_k": _never},
}

# Fields the gateway decides itself when it makes the call: ignored and named.
_GATEWAYS_OWN: dict[str, frozenset[str]] = {
    "openai": frozenset(),
    # Its cache breakpoints (``anthropic_messages``), and a diagnosis against a message
    # id of the upstream's, which the client never saw.
    "anthropic": frozenset({"cache_control", "diagnostics"}),
}

# The answer's shape and the reasoning effort, where the other provider has a word for
# them: OpenAI's ``response_format`` (a JSON Schema) and ``reasoning_effort``, Anthropic's
# ``output_config`` ``format`` and ``effort``. The same format keeps its own words.
_CONVERTED: dict[str, frozenset[str]] = {
    "openai": frozenset({"response_format", "reasoning_effort"}),
    "anthropic": frozenset({"output_config"}),
}
_ANTHROPIC_EFFORTS = ("low", "medium", "high", "xhigh", "max")

# The range each provider takes.
_TEMPERATURE_MAX = {"openai": 2.0, "anthropic": 1.0}
_PROVIDER = {"openai": "an OpenAI", "anthropic": "an Anthropic"}


@dataclass(frozen=True)
class Decision:
    params: Params
    ignored: tuple[str, ...] = ()  # fields not sent upstream, named in IGNORED_HEADER


def decide(fmt: Format, body: Mapping[str, Any], *, upstream: Format) -> Decision:
    """The client's (checked) ``body`` as the settings of an upstream call to an
    ``upstream`` provider; raises WireError naming the first field that cannot be honoured."""
    for name, (default, why) in _UNSERVED[fmt].items():
        if body.get(name) is not None and not default(body[name]):
            raise WireError(f"{name}: not served through this gateway endpoint: {why}.", param=name)
    read = _HANDLED[fmt] | _TRANSLATED[fmt] | _UNSERVED[fmt].keys()
    native: dict[str, Any] = {}
    ignored: list[str] = []
    for name, value in body.items():
        if name in read or value is None or (fmt != upstream and name in _CONVERTED[fmt]):
            continue
        if fmt != upstream and not _FIELD_NAME.fullmatch(name):
            # Ignored fields are named in a response header, which takes no such name.
            raise WireError(f"{name[:40]!r}: not a field of this API.", param=name[:40])
        if name in _GATEWAYS_OWN[fmt]:
            ignored.append(name)
        elif fmt == upstream:
            native[name] = value
        elif (default := _UNTRANSLATABLE[fmt].get(name)) is None:
            ignored.append(name)
        elif not default(value):
            raise WireError(
                f"{name}: this key's agent runs {_PROVIDER[upstream]} model, which has no "
                f"`{name}`; leave it out.",
                param=name,
            )
    params = _openai(body) if fmt == "openai" else _anthropic(body)
    if fmt != upstream:
        params = _converted(params, fmt, body)
    _check_ranges(params, fmt, upstream)
    _check_tool_choice(params, fmt, body)
    if native:
        params = dataclasses.replace(params, native={upstream: native})
    return Decision(params, tuple(sorted(ignored)))


def _openai(body: Mapping[str, Any]) -> Params:
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    return Params(
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        stop=_strings(stop, "stop", "a string or an array of strings"),
        tool_choice=_openai_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=_bool(body, "parallel_tool_calls"),
        user=_string(body.get("user"), "user"),
    )


def _openai_tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    function = (
        value.get("function")
        if isinstance(value, dict) and value.get("type") == "function"
        else None
    )
    if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
        return ToolChoice("tool", function["name"])
    raise WireError(
        "tool_choice: must be `auto`, `none`, `required` or "
        '{"type": "function", "function": {"name": ...}}.',
        param="tool_choice",
    )


def _anthropic(body: Mapping[str, Any]) -> Params:
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise WireError("metadata: must be an object.", param="metadata")
    choice, parallel = _anthropic_tool_choice(body.get("tool_choice"))
    return Params(
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        stop=_strings(body.get("stop_sequences"), "stop_sequences", "an array of strings"),
        tool_choice=choice,
        parallel_tool_calls=parallel,
        user=_string((metadata or {}).get("user_id"), "metadata.user_id"),
    )


_ANTHROPIC_CHOICES = {"auto": "auto", "none": "none", "any": "required", "tool": "tool"}


def _anthropic_tool_choice(value: Any) -> tuple[ToolChoice | None, bool | None]:
    if value is None:
        return None, None
    kind = value.get("type") if isinstance(value, dict) else None
    if not isinstance(kind, str) or kind not in _ANTHROPIC_CHOICES:
        raise WireError(
            "tool_choice.type: must be `auto`, `any`, `tool` or `none`.", param="tool_choice.type"
        )
    name = value.get("name")
    if kind == "tool" and (not isinstance(name, str) or not name):
        raise WireError("tool_choice.name: Field required", param="tool_choice.name")
    disable = value.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise WireError(
            "tool_choice.disable_parallel_tool_use: must be a boolean.",
            param="tool_choice.disable_parallel_tool_use",
        )
    return ToolChoice(_ANTHROPIC_CHOICES[kind], name if kind == "tool" else ""), (
        False if disable else None
    )


def _converted(params: Params, fmt: Format, body: Mapping[str, Any]) -> Params:
    """``params`` with the answer's JSON Schema and the reasoning effort of a client of
    the other format, in neutral words."""
    if fmt == "openai":
        schema = _openai_schema(body.get("response_format"))
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in _ANTHROPIC_EFFORTS:
            raise WireError(
                f"reasoning_effort: this key's agent runs an Anthropic model, whose efforts are "
                f"{', '.join(_ANTHROPIC_EFFORTS)}.",
                param="reasoning_effort",
            )
        return dataclasses.replace(params, json_schema=schema, effort=effort)
    config = body.get("output_config")
    if config is None:
        return params
    if not isinstance(config, dict):
        raise WireError("output_config: must be an object.", param="output_config")
    if unknown := sorted(config.keys() - {"format", "effort"}):
        raise WireError(
            f"output_config.{unknown[0]}: this key's agent runs an OpenAI model, which has no "
            "such setting; leave it out.",
            param=f"output_config.{unknown[0]}",
        )
    output = config.get("format")
    if output is not None and (
        not isinstance(output, dict)
        or output.get("type") != "json_schema"
        or not isinstance(output.get("schema"), dict)
    ):
        raise WireError(
            'output_config.format: must be {"type": "json_schema", "schema": {...}}.',
            param="output_config.format",
        )
    effort = config.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise WireError("output_config.effort: must be a string.", param="output_config.effort")
    return dataclasses.replace(
        params, json_schema=output["schema"] if output else None, effort=effort
    )


def _openai_schema(response_format: Any) -> Mapping[str, Any] | None:
    """The JSON Schema an OpenAI ``response_format`` asks for; Anthropic has no JSON mode
    without a schema."""
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if response_format is None or kind == "text":
        return None
    spec = response_format.get("json_schema") if kind == "json_schema" else None
    if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
        return spec["schema"]
    raise WireError(
        "response_format: this key's agent runs an Anthropic model, which takes a JSON Schema "
        '({"type": "json_schema", "json_schema": {"schema": ...}}) and no other format.',
        param="response_format",
    )


def _check_ranges(params: Params, fmt: Format, upstream: Format) -> None:
    temperature_max = _TEMPERATURE_MAX[upstream]
    if params.temperature is not None and not 0 <= params.temperature <= temperature_max:
        also = "" if fmt == upstream else f" (this key's agent runs {_PROVIDER[upstream]} model)"
        raise WireError(
            f"temperature: must be between 0 and {temperature_max:g}{also}.", param="temperature"
        )
    if params.top_p is not None and not 0 <= params.top_p <= 1:
        raise WireError("top_p: must be between 0 and 1.", param="top_p")


def _check_tool_choice(params: Params, fmt: Format, body: Mapping[str, Any]) -> None:
    """A choice that needs a tool needs tools, and a named one among them (either
    provider refuses it otherwise; the client hears it in its own words)."""
    choice = params.tool_choice
    if choice is None or choice.mode in ("auto", "none"):
        return
    tools = body.get("tools") or ()
    names = {
        (t.get("function") or {}).get("name") if fmt == "openai" else t.get("name") for t in tools
    }
    if not tools:
        raise WireError(f"tool_choice: `{choice.mode}` needs `tools`.", param="tool_choice")
    if choice.mode == "tool" and choice.name not in names:
        raise WireError(
            f"tool_choice: no tool named {choice.name!r} in `tools`.", param="tool_choice"
        )


def _strings(value: Any, name: str, words: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise WireError(f"{name}: must be {words}.", param=name)
    return tuple(value)


def _string(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise WireError(f"{name}: must be a string.", param=name)
    return value or None


def _number(body: Mapping[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise WireError(f"{name}: must be a number.", param=name)
    return value


def _bool(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise WireError(f"{name}: must be a boolean.", param=name)
    return value
