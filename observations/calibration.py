"""Per-model calibration of the gateway's token estimates, kept across sessions."""

from __future__ import annotations

from observations.gateway.budget import Calibration as CalibrationState
from observations.models import Calibration


def calibration_load(model: str) -> CalibrationState:
    row = Calibration.objects.filter(model=model).first()
    if row is None:
        return CalibrationState(model)
    return CalibrationState(model, ratio=row.ratio, samples=row.samples)


def calibration_save(state: CalibrationState) -> None:
    Calibration.objects.update_or_create(model=state.model, defaults={"ratio": state.ratio, "samples": state.samples})
