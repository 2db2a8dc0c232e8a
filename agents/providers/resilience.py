"""Retries, backoff and fallback around providers, and the per-call record.

Policy, by error:
- ContextOverflow and Rejected end the call at once (the gateway folds, or a person
  fixes the configuration); nothing is retried and no fallback is tried.
- Transient is retried on the same endpoint with exponential backoff and jitter, or
  after exactly the server's Retry-After; at most ``max_attempts`` requests per
  endpoint; a Retry-After longer than ``max_retry_after`` ends the call at once so a
  session is never parked inside a sleep.
- ConnectionFailed moves to the next fallback endpoint; the last endpoint treats it as
  transient, since there is nowhere else to go.
- A streamed call that already gave a piece of its turn is not retried: the pieces
  went on to the caller's client.
- No retry starts past the whole call's limit (``Timeouts.call``): a hung provider holds
  a worker for that long at most, not for ``max_attempts`` times the answer's limit.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from agents.providers.base import DeltaSink, Provider
from agents.providers.errors import ConnectionFailed, ProviderError, Transient
from agents.providers.records import CallRecord, Completion, prefix_hash
from observations.gateway.messages import ModelTurn, Request, TurnDelta

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 5  # requests per endpoint, the first included
    base_delay: float = 1.0  # seconds before the first retry, doubled each time
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise ValueError("need 0 <= base_delay <= max_delay")

    def backoff(self, retry: int, rng: Callable[[], float]) -> float:
        """Delay before retry number ``retry`` (1-based): half fixed, half jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (retry - 1))
        return ceiling / 2 + ceiling / 2 * rng()


class ResilientProvider:
    """A Provider over a chain of endpoints: the primary, then its fallbacks."""

    def __init__(
        self,
        chain: Sequence[Provider],
        *,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
        call_limit: float | None = None,
    ) -> None:
        """``call_limit``: seconds the whole call may take (``Timeouts.call``); a retry
        that would start past it is not made."""
        if not chain:
            raise ValueError("a ResilientProvider needs at least one endpoint")
        self.chain = tuple(chain)
        self.spec = self.chain[0].spec
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rng = rng
        self._clock = clock
        self._call_limit = call_limit

    def complete(self, request: Request) -> ModelTurn:
        return self.call(request).turn

    def close(self) -> None:
        """Release the endpoints' HTTP connection pools (a worker builds one per session)."""
        for provider in self.chain:
            close = getattr(provider, "close", None)
            if close is not None:
                close()

    def call(self, request: Request, on_delta: DeltaSink | None = None) -> Completion:
        """The turn and its record; on failure the raised ProviderError carries ``.record``.
        ``on_delta``: the turn is streamed (``Provider.complete``); once a piece of it was
        given, a failure is final (a retry would give the same pieces again)."""
        streamed = False

        def delta_sink(delta: TurnDelta) -> None:
            nonlocal streamed
            streamed = True
            assert on_delta is not None
            on_delta(delta)

        streaming = {} if on_delta is None else {"on_delta": delta_sink}
        state = _CallState(
            base=CallRecord(
                model=self.spec, requested_model=self.spec, prefix_hash=prefix_hash(request)
            ),
            started=self._clock(),
            provider=self.chain[0],
        )
        for position, provider in enumerate(self.chain):
            state.provider, state.position = provider, position
            is_last = position == len(self.chain) - 1
            for attempt in range(1, self.policy.max_attempts + 1):
                state.attempts += 1
                try:
                    turn = provider.complete(request, **streaming)
                except ProviderError as exc:
                    if streamed or not isinstance(exc, ConnectionFailed | Transient):
                        raise self._failed(exc, state) from None
                    if isinstance(exc, ConnectionFailed) and not is_last:
                        log.warning(
                            "%s; falling back to %s", exc.message, self.chain[position + 1].spec
                        )
                        break
                    retry_after = exc.retry_after if isinstance(exc, Transient) else None
                    self._wait_or_raise(exc, retry_after, attempt, state)
                else:
                    return Completion(turn, self._succeeded(turn, state))
        raise AssertionError("unreachable: the last endpoint either answers or raises")

    def _wait_or_raise(
        self, exc: ProviderError, retry_after: float | None, attempt: int, state: _CallState
    ) -> None:
        if attempt >= self.policy.max_attempts:
            raise self._failed(exc, state) from None
        if retry_after is not None and retry_after > self.policy.max_retry_after:
            log.warning(
                "%s; Retry-After %.0f s is beyond the retry bound", exc.message, retry_after
            )
            raise self._failed(exc, state) from None
        delay = retry_after if retry_after is not None else self.policy.backoff(attempt, self._rng)
        if self._call_limit is not None and self._clock() - state.started + delay >= self._call_limit:
            exc.message = f"{exc.message}; given up after {state.attempts} attempts: the call's limit is " \
                          f"{self._call_limit:g} s"
            exc.args = (exc.message,)
            raise self._failed(exc, state) from None
        log.info(
            "%s; retry %d/%d in %.2f s", exc.message, attempt, self.policy.max_attempts - 1, delay
        )
        self._sleep(delay)

    def _succeeded(self, turn: ModelTurn, state: _CallState) -> CallRecord:
        usage = turn.usage
        return replace(
            state.base,
            model=state.provider.spec,
            input_tokens=usage.input_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            # Every provider that reports usage counts some input; zero means none came.
            usage_reported=usage.input_tokens > 0,
            latency_ms=turn.latency_ms,
            elapsed_ms=self._elapsed_ms(state.started),
            attempts=state.attempts,
            fallback_used=state.position > 0,
            stop_reason=turn.stop_reason,
        )

    def _failed(self, exc: ProviderError, state: _CallState) -> ProviderError:
        exc.record = replace(
            state.base,
            model=state.provider.spec,
            elapsed_ms=self._elapsed_ms(state.started),
            attempts=state.attempts,
            fallback_used=state.position > 0,
            error=exc.message,
            error_kind=exc.kind,
        )
        return exc

    def _elapsed_ms(self, started: float) -> int:
        return int((self._clock() - started) * 1000)


@dataclass(slots=True)
class _CallState:
    """Where one call stands: the endpoint being tried and the requests made so far."""

    base: CallRecord
    started: float
    provider: Provider
    position: int = 0
    attempts: int = 0
