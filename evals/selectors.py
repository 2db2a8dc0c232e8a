"""Reads of the eval ledger for pages. A run's details are room content: members of its
room see them; a run without a room (skipped) belongs to whoever started its batch.
Staff see every run."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404

from evals.models import EvalRun, EvalVerdict
from rooms.models import Room


def eval_runs_for(user: AbstractBaseUser | AnonymousUser, *, room: Room | None = None) -> QuerySet[EvalRun]:
    runs = EvalRun.objects.select_related("batch", "room", "session").order_by("-batch_id", "scenario", "run")
    if room is not None:
        return runs.filter(room=room)  # the caller checked membership (access_room)
    if not user.is_authenticated:
        return runs.none()
    if user.is_staff:
        return runs
    return runs.filter(Q(room__memberships__user=user) | Q(room__isnull=True, batch__created_by=user)).distinct()


def access_eval_run(user: AbstractBaseUser | AnonymousUser, run_id: int) -> EvalRun:
    run = eval_runs_for(user).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such eval run.")
    return run


def verdicts_for(user: AbstractBaseUser | AnonymousUser) -> QuerySet[EvalVerdict]:
    """Replay verdicts (about recorded trajectories) and verdicts on batches the user can see."""
    visible = eval_runs_for(user).values("batch_id")
    return EvalVerdict.objects.filter(Q(source="replay") | Q(a_batch__in=visible, b_batch__in=visible))[:200]
