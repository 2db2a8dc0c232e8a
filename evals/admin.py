"""The eval ledger in the admin, read-only: the runner and the comparisons write it."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from evals.models import EvalBatch, EvalRun, EvalVerdict


class _LedgerAdmin(admin.ModelAdmin):
    """The eval ledger is written by `manage.py eval` and compare only: read here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(EvalBatch)
class EvalBatchAdmin(_LedgerAdmin):
    list_display = ["id", "label", "model", "scripted", "runs_per_scenario", "created_by", "created_at"]
    list_filter = ["scripted", "model"]
    search_fields = ["label", "model"]


@admin.register(EvalRun)
class EvalRunAdmin(_LedgerAdmin):
    list_display = ["scenario", "batch", "run", "model", "state", "resets", "request_passed", "request_total",
                    "behaviour_passed", "behaviour_total"]
    list_filter = ["state", "scenario_kind", "model"]
    search_fields = ["scenario", "reason"]


@admin.register(EvalVerdict)
class EvalVerdictAdmin(_LedgerAdmin):
    list_display = ["subject", "verdict", "source", "a_label", "b_label", "created_at"]
    list_filter = ["verdict", "source"]
    search_fields = ["subject", "a_label", "b_label", "detail"]
