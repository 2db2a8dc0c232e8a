"""The request body as Atrium built it, past the official SDKs' rewriting.

Both SDKs walk every typed field of a request through its TypedDict annotations
before sending it (``maybe_transform``): for the whole history, on every call. It was
the largest cost of a gateway request in a profile (about 80 ms of CPU at step 35 of a
conversation, growing with the history). The providers build the history, tools and
system prompt in their wire shape already, so those go as ``extra_body``, which the
SDKs merge into the body as given.
"""

from __future__ import annotations

from typing import Any

BULKY = ("messages", "tools", "system")


def as_built(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` for the SDK's ``create``/``stream``: the bulky fields in
    ``extra_body`` (``messages``, which the SDK requires, left empty in its place)."""
    moved = {name: params[name] for name in BULKY if name in params}
    kept = {name: value for name, value in params.items() if name not in moved}
    return {**kept, "messages": [], "extra_body": {**moved, **params.get("extra_body", {})}}
