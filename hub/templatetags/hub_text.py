"""Text filters for the hub's templates."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_BACKTICKED = re.compile(r"`([^`\n]+)`")


@register.filter
def code_spans(text: str) -> SafeString:
    """Help texts name commands between backticks, as the docs do: shown as code, not as
    literal backticks. Everything else is escaped."""
    return mark_safe(_BACKTICKED.sub(r"<code>\1</code>", escape(str(text))))  # noqa: S308 - escaped first
