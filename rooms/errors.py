"""The one error type room services raise: a code for machines, a sentence for people."""

from __future__ import annotations


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
