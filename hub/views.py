from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
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
