"""The content-addressed blob store every room's observations share, and the per-model
calibration of the gateway's token estimates."""

from __future__ import annotations

from django.db import models


class Blob(models.Model):
    """The exact bytes of a tool result, stored once however many sessions produce it.

    Small blobs live in the row; larger ones in a file under DATA_DIR/blobs named by
    their hash (written before the row, so a row never points at a missing file).
    """

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    token_estimate = models.PositiveIntegerField()
    first_line = models.CharField(max_length=300, blank=True)
    data = models.BinaryField(null=True, blank=True)
    in_file = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"


class Calibration(models.Model):
    """Reported ÷ estimated input tokens, per model; never shared across models."""

    model = models.CharField(max_length=200, unique=True)
    ratio = models.FloatField(default=1.0)
    samples = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.model}: ×{self.ratio:.3f} ({self.samples} samples)"
