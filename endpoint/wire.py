"""What the endpoint reads of every request, whatever its format: the body as JSON,
the error it answers with (``WireError``, said in the client's format by
``endpoint.formats``), and the field checks the formats' request checks share.

Plain Python, no Django. The checks look at what the endpoint relies on and at what
would otherwise reach the upstream malformed (so the client hears about its own
mistake in its own format, with the field named, instead of an upstream error or a
traceback); fields they do not know pass through to the upstream untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

Format = Literal["openai", "anthropic", "responses"]  # a name in endpoint.formats.FORMATS

MAX_BODY_BYTES = 32 * 1024 * 1024  # Anthropic's own request limit
# A JSON escape of a surrogate (\ud800-\udfff), rare: a body with one is looked at closer.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# Half of a surrogate pair without its other half, which json.loads lets through as a
# character no text can be encoded with: what comes before it is skipped a piece at a
# time (escaped backslashes and whole pairs included), possessively, never backtracking.
_LONE_SURROGATE = re.compile(rb"(?:[^\\]++|\\[^u]|\\u(?![dD][89a-fA-F])"
                             rb"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*+\\u[dD][89a-fA-F]")


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
        # UTF-8 only (json.loads would take UTF-16 and surrogates written out in bytes).
        body = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        raise WireError("The request body nests too deeply.") from None
    except (ValueError, UnicodeDecodeError):
        raise WireError("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object.")
    if _SURROGATE_ESCAPE.search(raw) and _LONE_SURROGATE.match(raw):
        raise WireError("The request body is not valid Unicode: it escapes half of a surrogate pair (\\ud800-\\udfff) "
                        "without the other half.")
    return body


def check_type(body: Mapping[str, Any], field: str, kind: type, *, required: bool = False) -> Any:
    if field not in body or (body[field] is None and not required):
        if required:
            raise WireError(f"{field}: Field required", param=field)
        return None
    value = body[field]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise WireError(f"{field}: must be {_KIND_WORDS[kind]}.", param=field)
    return value


def check_positive_int(body: Mapping[str, Any], field: str) -> None:
    value = body.get(field)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise WireError(f"{field}: must be a positive integer.", param=field)


def check_number(body: Mapping[str, Any], field: str) -> None:
    value = body.get(field)
    if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
        raise WireError(f"{field}: must be a number.", param=field)


_KIND_WORDS = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}
