"""Keeping the process environment's headers away from endpoints they were not meant for.

Both SDKs read ``<PREFIX>_CUSTOM_HEADERS`` (and OpenAI ``OPENAI_ORG_ID`` and
``OPENAI_PROJECT_ID``) from ``os.environ`` whatever the client is given, and an
``Authorization`` listed there even replaces the client's own key. Those headers are
the hub's (often a gateway's credentials): an endpoint from an agent profile gets none.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any


def withheld_headers(
    variable: str, *, api_key: str, omit: Any, also: Iterable[str] = ()
) -> dict[str, Any]:
    """``default_headers`` that cancel every header the SDK would take from ``variable``
    (and the ``also`` ones): ``omit`` (the SDK's ``Omit()``) drops a header; an
    ``Authorization`` is set back to the client's own key, as the SDKs send keys."""
    listed = [
        line.split(":", 1)[0].strip()
        for line in os.environ.get(variable, "").split("\n")
        if ":" in line
    ]
    headers: dict[str, Any] = {name: omit for name in [*listed, *also] if name}
    for name in listed:
        if name.lower() == "authorization":
            headers[name] = f"Bearer {api_key}"
    return headers
