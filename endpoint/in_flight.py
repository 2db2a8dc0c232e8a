"""How many requests each gateway key has in flight in this process: at most
``ATRIUM_GATEWAY_KEY_CONCURRENCY``, so one key's slow requests (30 of them on one key
stalled everyone's gateway) cannot take the database connections and upstream slots
every other key needs. A request past the cap is a 429 the SDKs retry after a second.
Counted on the event loop's thread only (the endpoint's views are async)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable

from endpoint.wire import WireError

_counts: Counter[int] = Counter()


def claim(key_id: int, limit: int) -> Callable[[], None]:
    """Take one of the key's slots; the function returned gives it back (once)."""
    if _counts[key_id] >= limit:
        error = WireError(f"This gateway key already has {limit} requests in flight; send the next one when one "
                          "of them has finished.", status=429, kind="rate_limit_error")
        error.retry_after = 1.0
        raise error
    _counts[key_id] += 1
    given_back = False

    def release() -> None:
        nonlocal given_back
        if not given_back:
            given_back = True
            _counts[key_id] -= 1
            if _counts[key_id] <= 0:
                del _counts[key_id]

    return release


async def releasing(stream: AsyncIterator[bytes], release: Callable[[], None]) -> AsyncIterator[bytes]:
    """``stream``, giving the slot back when it ends, fails or the client goes away."""
    try:
        async for chunk in stream:
            yield chunk
    finally:
        release()
