from __future__ import annotations

import sys

from django.contrib.auth.decorators import login_not_required
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults
from django.views.decorators.http import require_GET

from hub.health import run_checks


@login_not_required
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = run_checks()
    healthy = all(check.ok for check in checks.values())
    body = {
        "status": "ok" if healthy else "degraded",
        "checks": {name: {"ok": c.ok, "detail": c.detail} for name, c in checks.items()},
    }
    return JsonResponse(body, status=200 if healthy else 503)


RETRY_AFTER_SECONDS = 5


def server_error(request: HttpRequest) -> HttpResponse:
    """The hub's 500, but a 503 with Retry-After when the database could not be reached
    (a restart, a dropped connection): waiting fixes that, and the page says so. Its
    template needs no database (no context processors)."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        response = HttpResponse(loader.get_template("503.html").render(), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return defaults.server_error(request)
