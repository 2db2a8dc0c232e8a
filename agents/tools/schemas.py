"""The tool schemas the model sees, and the checking of the arguments it sends back,
both derived from the tools' entries in agents.tools.registry.

Every byte here is sent with every request, so descriptions are short and the
validation (not the schema) carries the strictness: unknown keys are refused even
though the schemas do not spell out ``additionalProperties``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from observations.gateway.messages import MALFORMED_ARGUMENTS_KEY, ToolSchema

from . import registry


class ArgumentError(ValueError):
    """The model's arguments do not fit the tool; the message says how to fix them."""


TOOL_SCHEMAS: tuple[ToolSchema, ...] = tuple(tool.schema for tool in registry.TOOLS)
SCHEMAS_BY_NAME = {schema.name: schema for schema in TOOL_SCHEMAS}

# Optional arguments and the value they take when absent (None: "not given").
DEFAULTS: dict[str, dict[str, Any]] = {tool.name: tool.defaults for tool in registry.TOOLS}

# Constraints the schemas leave out to stay short (agents.tools.registry.Arg).
_ARGS = [(tool.name, arg) for tool in registry.TOOLS for arg in tool.arguments]
_MINIMUMS: dict[tuple[str, str], float] = {(t, a.name): a.minimum for t, a in _ARGS if a.minimum is not None}
_NON_BLANK = {(t, a.name) for t, a in _ARGS if a.non_blank}
_NON_EMPTY = {(t, a.name) for t, a in _ARGS if a.non_empty}
_NO_NUL = {(t, a.name) for t, a in _ARGS if a.no_nul}
# What an unpaired \udcxx escape in the model's JSON leaves: not text, so no file,
# command line or stored record can hold it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class CheckedArguments:
    tool: str
    values: dict[str, Any]  # sorted keys, defaults filled


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "array", dict: "object"}.get(type(value), type(value).__name__)


def _check_text(where: str, tool: str, key: str, value: str) -> None:
    lone = _LONE_SURROGATE.search(value)
    if lone is not None:
        raise ArgumentError(
            f"{where} holds a lone surrogate \\u{ord(lone.group()):04x} at position "
            f"{lone.start()}, which is not text; send the character itself"
        )
    if (tool, key) in _NO_NUL and "\x00" in value:
        raise ArgumentError(f"{where} must not contain a NUL character")


def _check_value(tool: str, key: str, spec: dict[str, Any], value: Any) -> Any:
    expected = spec["type"]
    where = f"{tool}: argument {key!r}"
    if expected == "string":
        return _check_string(where, tool, key, value)
    if expected == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(f"{where} must be true or false, got {_type_name(value)}")
        return value
    if expected in ("integer", "number"):
        return _check_number(where, tool, key, value, whole=expected == "integer")
    if expected == "array":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ArgumentError(f"{where} must be a list of strings, got {_type_name(value)}")
        for item in value:
            _check_text(where, tool, key, item)
        return list(value)
    raise AssertionError(f"unsupported schema type {expected!r}")


def _check_string(where: str, tool: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{where} must be a string, got {_type_name(value)}")
    if ((tool, key) in _NON_BLANK and not value.strip()) or (
            (tool, key) in _NON_EMPTY and not value):
        raise ArgumentError(f"{where} must not be empty")
    _check_text(where, tool, key, value)
    return value


def _check_number(where: str, tool: str, key: str, value: Any, *, whole: bool) -> int | float:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or (isinstance(value, float) and not math.isfinite(value)):
        raise ArgumentError(f"{where} must be a number, got {_type_name(value)} {value!r}")
    if whole:
        if isinstance(value, float) and not value.is_integer():
            raise ArgumentError(f"{where} must be a whole number, got {value!r}")
        value = int(value)
    minimum = _MINIMUMS.get((tool, key))
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{where} must be at least {minimum:g}, got {value!r}")
    return value


def check_arguments(tool: str, arguments: Any) -> CheckedArguments:
    """Validate ``arguments`` for ``tool``; return them normalized or raise ArgumentError."""
    schema = SCHEMAS_BY_NAME.get(tool)
    if schema is None:
        raise ArgumentError(f"unknown tool {tool!r}")
    if not isinstance(arguments, dict):
        raise ArgumentError(
            f"{tool}: arguments must be a JSON object, got {_type_name(arguments)}"
        )
    properties: dict[str, dict[str, Any]] = schema.parameters["properties"]
    if MALFORMED_ARGUMENTS_KEY in arguments:  # what the model wrote did not parse as a JSON object
        raw = " ".join(str(arguments[MALFORMED_ARGUMENTS_KEY]).split())
        raise ArgumentError(f"{tool}: the arguments are not valid JSON for an object "
                            f"({raw[:200]!r}{'…' if len(raw) > 200 else ''}); send one JSON object with: "
                            f"{', '.join(properties)}")
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ArgumentError(
            f"{tool}: unknown argument(s) {', '.join(map(repr, unknown))}; "
            f"accepted: {', '.join(properties)}"
        )
    required = schema.parameters.get("required", [])
    missing = [key for key in required if arguments.get(key) is None]
    if missing:
        raise ArgumentError(f"{tool}: missing required argument(s) {', '.join(map(repr, missing))}")
    values: dict[str, Any] = dict(DEFAULTS[tool])
    for key, value in arguments.items():
        # An explicit null means "not given", which is how several models spell it.
        if value is None:
            continue
        values[key] = _check_value(tool, key, properties[key], value)
    return CheckedArguments(tool=tool, values=dict(sorted(values.items())))
