"""The one error type room services raise: a code for machines, a sentence for people."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied


class RoomError(Exception):
    """A refused room action. Nothing was written when this is raised.

    ``code`` is stable and machine-readable (websocket error frames carry it);
    the message is a sentence a person can act on (forms show it).
    """

    def __init__(self, message: str, *, code: str = "invalid") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class RoomPermissionError(RoomError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="forbidden")


def attempt(service: Callable[..., Any], **kwargs: Any) -> str | None:
    """Run a service for a view: None if it did it, else its refusal as a sentence; a
    forbidden action raises PermissionDenied (a 403 page that says why)."""
    try:
        service(**kwargs)
    except RoomPermissionError as exc:
        raise PermissionDenied(exc.message) from exc
    except RoomError as exc:
        return exc.message
    return None
