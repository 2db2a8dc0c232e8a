"""Small helpers the format readers share."""

from __future__ import annotations

import re
from typing import Any

from observations.replay.trajectory import TrajectoryFormatError

_UPLOADED = re.compile(r"<uploaded_files>\s*(/[^\s<]*)\s*</uploaded_files>")


def uploaded_root(task: str) -> str | None:
    """The repository root a SWE-bench style task names (``<uploaded_files>/testbed``)."""
    match = _UPLOADED.search(task)
    return match.group(1).rstrip("/") or "/" if match else None


def content_text(content: Any, where: str) -> str:
    """Message content as text: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    raise TrajectoryFormatError(f"{where}: expected text content, got {type(content).__name__}")


def optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def expect_dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TrajectoryFormatError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def expect_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TrajectoryFormatError(f"{where}: expected a list, got {type(value).__name__}")
    return value
