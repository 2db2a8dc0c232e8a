"""The two wire formats a client may speak, as far as the endpoint reads them: checks
of a request body, error bodies in each provider's own shape, model lists.

Plain Python, no Django. The checks look at what the endpoint relies on and at what
would otherwise reach the upstream malformed (so the client hears about its own
mistake in its own format, with the field named, instead of an upstream error or a
traceback); fields they do not know pass through to the upstream untouched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

Format = Literal["openai", "anthropic"]

MAX_BODY_BYTES = 32 * 1024 * 1024  # Anthropic's own request limit
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
ANTHROPIC_ROLES = frozenset({"user", "assistant"})


class WireError(Exception):
    """A request the endpoint refuses, said in the client's format.

    ``kind`` is the error's type in both formats' words (``invalid_request_error``,
    ``authentication_error``, ...); ``param`` names the field, when one is at fault.
    """

    def __init__(self, message: str, *, status: int = 400, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.param = param
        self.code = code
        self.retry_after: float | None = None  # seconds, sent as a Retry-After header
        self.headers: dict[str, str] = {}  # an upstream's retry and rate-limit headers, passed on


def error_body(fmt: Format, error: WireError) -> dict[str, Any]:
    """The body each provider's SDK reads its error from (``APIStatusError.message``,
    ``.body``, ``.code``)."""
    if fmt == "anthropic":
        return {"type": "error", "error": {"type": error.kind, "message": error.message}}
    return {"error": {"message": error.message, "type": error.kind, "param": error.param, "code": error.code}}


def unauthorized() -> WireError:
    return WireError(
        "Invalid gateway key. Make one on the room page (Gateway keys) and send it as "
        "`Authorization: Bearer <key>` (OpenAI clients) or `x-api-key: <key>` (Anthropic clients).",
        status=401, kind="authentication_error", code="invalid_api_key",
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_BODY_BYTES:
        raise WireError(f"The request body is larger than {MAX_BODY_BYTES} bytes.", status=413,
                        kind="request_too_large")
    try:
        body = json.loads(raw)
    except RecursionError:
        raise WireError("The request body nests too deeply.") from None
    except (ValueError, UnicodeDecodeError):
        raise WireError("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object.")
    return body


def check_openai_chat(body: Mapping[str, Any]) -> None:
    """A Chat Completions request, as far as the endpoint and the upstream rely on it."""
    _check_type(body, "model", str, required=True)
    messages = _check_type(body, "messages", list, required=True)
    if not messages:
        raise WireError("messages: must hold at least one message.", param="messages")
    for i, message in enumerate(messages):
        _check_openai_message(i, message)
    _check_openai_tools(body)
    _check_type(body, "stream", bool)
    _check_type(body, "stream_options", dict)
    for field in ("max_tokens", "max_completion_tokens", "n"):
        _check_positive_int(body, field)
    for field in ("temperature", "top_p"):
        _check_number(body, field)


def _check_openai_message(i: int, message: Any) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise WireError(f"{where}: must be an object.", param=where)
    role = message.get("role")
    if role not in OPENAI_ROLES:
        raise WireError(f"{where}.role: must be one of {', '.join(sorted(OPENAI_ROLES))}.",
                        param=f"{where}.role")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise WireError(f"{where}.content: must be a string or a list of parts.", param=f"{where}.content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise WireError(f"{where}.tool_call_id: required for a tool message.", param=f"{where}.tool_call_id")
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise WireError(f"{where}.tool_calls: must be a list on an assistant message.",
                            param=f"{where}.tool_calls")
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                    or not isinstance(call.get("id"), str):
                raise WireError(f"{where}.tool_calls[{j}]: needs an `id` and a `function` with a `name`.",
                                param=f"{where}.tool_calls[{j}]")
            if "arguments" in function and not isinstance(function["arguments"], str):
                raise WireError(f"{where}.tool_calls[{j}].function.arguments: must be a string of JSON.",
                                param=f"{where}.tool_calls[{j}].function.arguments")


def _check_openai_tools(body: Mapping[str, Any]) -> None:
    tools = _check_type(body, "tools", list)
    for i, tool in enumerate(tools or ()):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            raise WireError(f"{where}: must be an object of type `function`.", param=where)
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise WireError(f"{where}.function.name: Field required", param=f"{where}.function.name")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise WireError(f"{where}.function.parameters: must be a JSON Schema object.",
                            param=f"{where}.function.parameters")


def check_anthropic_messages(body: Mapping[str, Any]) -> None:
    """A Messages request, as far as the endpoint and the upstream rely on it."""
    _check_type(body, "model", str, required=True)
    if "max_tokens" not in body:
        raise WireError("max_tokens: Field required", param="max_tokens")
    _check_positive_int(body, "max_tokens")
    messages = _check_type(body, "messages", list, required=True)
    for i, message in enumerate(messages):
        _check_anthropic_message(i, message)
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise WireError("system: must be a string or a list of text blocks", param="system")
    tools = _check_type(body, "tools", list)
    for i, tool in enumerate(tools or ()):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise WireError(f"tools.{i}.name: Field required", param=f"tools.{i}.name")
        if "type" not in tool and not isinstance(tool.get("input_schema"), dict):
            raise WireError(f"tools.{i}.input_schema: Field required", param=f"tools.{i}.input_schema")
    _check_type(body, "stream", bool)
    for field in ("temperature", "top_p"):
        _check_number(body, field)


def _check_anthropic_message(i: int, message: Any) -> None:
    where = f"messages.{i}"
    if not isinstance(message, dict):
        raise WireError(f"{where}: must be an object", param=where)
    if message.get("role") not in ANTHROPIC_ROLES:
        raise WireError(f"{where}.role: must be `user` or `assistant`", param=f"{where}.role")
    content = message.get("content")
    if isinstance(content, list):
        for j, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
                raise WireError(f"{where}.content.{j}.input: a tool_use block's input must be an object",
                                param=f"{where}.content.{j}.input")
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise WireError(f"{where}.content.{j}: a content block needs a `type`",
                                param=f"{where}.content.{j}")
    elif not isinstance(content, str):
        raise WireError(f"{where}.content: must be a string or a list of content blocks",
                        param=f"{where}.content")


def _check_type(body: Mapping[str, Any], field: str, kind: type, *, required: bool = False) -> Any:
    if field not in body or (body[field] is None and not required):
        if required:
            raise WireError(f"{field}: Field required", param=field)
        return None
    value = body[field]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise WireError(f"{field}: must be {_KIND_WORDS[kind]}.", param=field)
    return value


def _check_positive_int(body: Mapping[str, Any], field: str) -> None:
    value = body.get(field)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise WireError(f"{field}: must be a positive integer.", param=field)


def _check_number(body: Mapping[str, Any], field: str) -> None:
    value = body.get(field)
    if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
        raise WireError(f"{field}: must be a number.", param=field)


_KIND_WORDS = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}


def models_body(fmt: Format, model: str, *, created: int) -> dict[str, Any]:
    """The one model a key reaches (its agent profile's), as each SDK lists models."""
    if fmt == "anthropic":
        created_at = _iso(created)
        return {"data": [{"type": "model", "id": model, "display_name": model, "created_at": created_at}],
                "has_more": False, "first_id": model, "last_id": model}
    return {"object": "list", "data": [{"id": model, "object": "model", "created": created, "owned_by": "atrium"}]}


def _iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sse_error(fmt: Format, error: WireError) -> bytes:
    """An error after the stream's headers went out: the event each SDK raises from
    (OpenAI's ``data: {"error": ...}``, Anthropic's ``event: error``)."""
    data = json.dumps(error_body(fmt, error))
    if fmt == "anthropic":
        return f"event: error\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()
