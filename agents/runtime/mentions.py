"""Whether a chat message is addressed to an agent: ``@name``, not ``@namesake``."""

from __future__ import annotations

import re


def mention_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"@{re.escape(name)}(?![\w-])", re.IGNORECASE)


def mentions(text: str, name: str) -> bool:
    return bool(name) and mention_pattern(name).search(text) is not None
