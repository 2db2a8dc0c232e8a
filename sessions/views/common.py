"""What the session and task pages share: who may act, and how a refusal reads."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from rooms.checks import check_may_act
from rooms.errors import RoomError, RoomPermissionError
from rooms.selectors import RoomAccess


def require_control(access: RoomAccess) -> None:
    check_may_act(access.membership)


def forbid_viewers(access: RoomAccess) -> None:
    """For form pages: a viewer gets a 403 page saying why, not a form they cannot use."""
    try:
        require_control(access)
    except RoomPermissionError as exc:
        raise PermissionDenied(exc.message) from exc


def refusal(request: HttpRequest, exc: RoomError) -> str:
    """The sentence for a refused action; a forbidden one is a 403 outside htmx."""
    if isinstance(exc, RoomPermissionError) and not request.htmx:
        raise PermissionDenied(exc.message) from exc
    return exc.message


def flash_result(request: HttpRequest, notice: str | None, error: str | None) -> None:
    if notice:
        flash.success(request, notice)
    if error:
        flash.error(request, error)
