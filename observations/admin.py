"""The shared blob store and the calibrations, read in the admin."""

from __future__ import annotations

from django.contrib import admin

from observations.models import Blob, Calibration


@admin.register(Blob)
class BlobAdmin(admin.ModelAdmin):
    list_display = ("sha256", "size", "token_estimate", "in_file", "first_line", "created_at")
    list_filter = ("in_file",)
    search_fields = ("sha256", "first_line")
    exclude = ("data",)
    readonly_fields = ("sha256", "size", "token_estimate", "first_line", "in_file", "created_at")


@admin.register(Calibration)
class CalibrationAdmin(admin.ModelAdmin):
    list_display = ("model", "ratio", "samples", "updated_at")
    search_fields = ("model",)
