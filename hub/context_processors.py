from __future__ import annotations

from django.http import HttpRequest

from agents.confinement import sandbox_notice


def sandbox(request: HttpRequest) -> dict[str, str]:
    """The sandbox notice every page shows to people signed in (empty when all is well)."""
    user = getattr(request, "user", None)
    return {"sandbox_notice": sandbox_notice() if user is not None and user.is_authenticated else ""}
