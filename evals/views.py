"""The eval ledger on the web: every run (globally or per room) and a run's details."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evals.selectors import access_eval_run, eval_runs_for, verdicts_for
from rooms.selectors import access_room


@require_GET
@login_required
def eval_list(request: HttpRequest) -> HttpResponse:
    return render(request, "evals/evals.html", {"runs": eval_runs_for(request.user)[:500],
                                                 "verdicts": verdicts_for(request.user), "room": None})


@require_GET
@login_required
def room_evals(request: HttpRequest, slug: str) -> HttpResponse:
    access = access_room(request.user, slug)
    return render(request, "evals/evals.html", {"runs": eval_runs_for(request.user, room=access.room),
                                                 "verdicts": (), "room": access.room})


@require_GET
@login_required
def eval_run(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access_eval_run(request.user, run_id)
    checks = run.checks
    return render(request, "evals/eval_run.html", {
        "run": run,
        "request_checks": [c for c in checks if c["family"] == "request"],
        "behaviour_checks": [c for c in checks if c["family"] == "behaviour"],
    })
