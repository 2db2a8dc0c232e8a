"""Provider errors: what went wrong decides what the caller may do next.

- ``ContextOverflow``: the request does not fit. Never retried as it is; the gateway
  folds and sends a smaller request.
- ``Transient``: 408/409/429/5xx or a timeout. Retried with backoff, honouring
  Retry-After, a bounded number of times.
- ``ConnectionFailed``: the endpoint could not be reached. The next fallback model is
  tried.
- ``Rejected``: bad request, bad key, bad configuration. Permanent; the message says
  why. API keys never appear in any message.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from agents.providers.timeouts import Timeouts
from observations.gateway.overflow import overflow_reason
from observations.gateway.turn import Overflow

if TYPE_CHECKING:
    from agents.providers.records import CallRecord

_MESSAGE_LIMIT = 600
# Shapes of provider secrets, for keys echoed back that the caller did not hand us
# (an environment key, or a masked form such as "sk-proj-****abcd").
_KEY_SHAPES = re.compile(r"\b(?:sk-ant-|sk-proj-|sk-|AIza)[A-Za-z0-9_\-*.]{2,}")


class ProviderError(Exception):
    """A model call that produced no turn."""

    kind = "provider_error"

    def __init__(self, message: str, *, spec: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.spec = spec
        self.status = status
        # Set by ResilientProvider: the call's record, to persist even on failure.
        self.record: CallRecord | None = None


class ContextOverflow(ProviderError, Overflow):
    kind = "context_overflow"

    def __init__(
        self, message: str, *, spec: str = "", status: int | None = None, reason: str = ""
    ) -> None:
        super().__init__(message, spec=spec, status=status)
        self.reason = reason  # which rule of observations.gateway.overflow matched


class StreamAbandoned(ProviderError):
    """The caller stopped taking a streamed turn (its client went away): the upstream
    stream is closed where it stands."""

    kind = "abandoned"


class Transient(ProviderError):
    kind = "transient"

    def __init__(
        self,
        message: str,
        *,
        spec: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, spec=spec, status=status)
        self.retry_after = retry_after


class ConnectionFailed(ProviderError):
    kind = "connection_failed"


class Rejected(ProviderError):
    kind = "rejected"


class InvalidModelSpec(Rejected, ValueError):
    """A model spec this runtime cannot build (unknown prefix, missing key, bad file)."""

    kind = "invalid_model_spec"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _KEY_SHAPES.sub("[redacted]", text)


def display_url(url: str) -> str:
    """A base URL fit for messages: any user:password part removed."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


def error_from_status(
    *,
    spec: str,
    status: int,
    headers: Mapping[str, str],
    body_text: str,
    code: str | None = None,
    secrets: Iterable[str | None] = (),
) -> ProviderError:
    """Classify an HTTP error response; overflow is recognised before any status rule."""
    detail = redact(_error_message(body_text) or f"HTTP {status}", secrets)
    message = f"{spec}: HTTP {status}: {detail}"
    reason = overflow_reason(status=status, code=code, body=body_text)
    if reason is not None:
        return ContextOverflow(message, spec=spec, status=status, reason=reason)
    if status in (408, 409, 429) or status >= 500:
        return Transient(
            message, spec=spec, status=status, retry_after=retry_after_seconds(headers)
        )
    return Rejected(message, spec=spec, status=status)


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, retry-after seconds or date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_message(body_text: str) -> str:
    """The human message of an error body, or the body itself, cut to a sane length."""
    text = body_text.strip()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    if isinstance(parsed, Mapping):
        error = parsed.get("error", parsed)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(parsed.get("message"), str):
            text = parsed["message"]
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


@contextmanager
def sdk_errors(sdk: Any, *, base_error: type[Exception], spec: str, base_url: str, timeouts: Timeouts,
               api_key: str | None, code_of: Callable[[Any], str | None]) -> Iterator[None]:
    """Turn the errors of an official SDK (``openai`` or ``anthropic``: both generated
    alike) into ProviderErrors, keys redacted. ``base_error`` is the SDK's root error
    class and ``code_of`` reads the error code off an APIStatusError: the two SDKs name
    both differently."""
    try:
        yield
    except sdk.APITimeoutError as exc:  # a subclass of APIConnectionError: first
        if isinstance(exc.__cause__, httpx2.ConnectTimeout):
            raise Transient(f"{spec}: no connection to {display_url(base_url)} within {timeouts.connect:g} s",
                            spec=spec) from None
        raise Transient(f"{spec}: no answer within {timeouts.answer:g} s", spec=spec) from None
    except sdk.APIConnectionError as exc:
        cause = redact(str(exc.__cause__ or exc), [api_key])
        raise ConnectionFailed(f"{spec}: cannot reach {display_url(base_url)}: {cause}", spec=spec) from None
    except sdk.APIStatusError as exc:
        raise error_from_status(
            spec=spec, status=exc.status_code, headers=exc.response.headers, body_text=exc.response.text,
            code=code_of(exc), secrets=[api_key],
        ) from None
    except base_error as exc:
        raise ProviderError(f"{spec}: {redact(str(exc), [api_key])}", spec=spec) from None
    except httpx2.TransportError as exc:  # a stream cut off after its first event: the SDK does not wrap it
        raise Transient(f"{spec}: the stream from {display_url(base_url)} was cut off: "
                        f"{redact(str(exc), [api_key])}", spec=spec) from None
    except json.JSONDecodeError as exc:  # a 200 whose body was cut off, or is not JSON
        raise Transient(f"{spec}: the answer from {display_url(base_url)} is not complete JSON ({exc}); "
                        "it may have been cut off", spec=spec) from None
