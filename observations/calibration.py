"""Per-model calibration of the gateway's token estimates, kept across sessions.

It changes only on the first reported call after a fold, so every process keeps the
values it last read or wrote for a while (``FRESH_FOR``) instead of reading them on
each step, and writes only a change."""

from __future__ import annotations

import threading
import time

from django.db import transaction

from observations.gateway.budget import Calibration as CalibrationState
from observations.models import Calibration

FRESH_FOR = 30.0  # seconds a process trusts what it last read or wrote

_known: dict[str, tuple[float, int, float]] = {}  # model: ratio, samples, when read or written
_lock = threading.Lock()


def calibration_load(model: str) -> CalibrationState:
    with _lock:
        known = _known.get(model)
    if known is None or time.monotonic() - known[2] > FRESH_FOR:
        row = Calibration.objects.filter(model=model).values_list("ratio", "samples").first()
        ratio, samples = row or (1.0, 0)
        _remember(model, ratio, samples)
        return CalibrationState(model, ratio=ratio, samples=samples)
    return CalibrationState(model, ratio=known[0], samples=known[1])


def calibration_save(state: CalibrationState) -> None:
    with _lock:
        known = _known.get(state.model)
    if known is not None and (known[0], known[1]) == (state.ratio, state.samples):
        return
    Calibration.objects.bulk_create([Calibration(model=state.model, ratio=state.ratio, samples=state.samples)],
                                    update_conflicts=True, unique_fields=["model"],
                                    update_fields=["ratio", "samples", "updated_at"])
    with _lock:  # read again until the write commits
        _known.pop(state.model, None)
    # As fresh as the read it started from: another process's samples are read again
    # FRESH_FOR after it, however often this one writes.
    read_at = known[2] if known is not None else time.monotonic()
    saved = (state.ratio, state.samples)
    transaction.on_commit(lambda: _remember(state.model, *saved, at=read_at))


def calibration_forget() -> None:
    """Read every model's calibration again (the tests' database is emptied between them)."""
    with _lock:
        _known.clear()


def _remember(model: str, ratio: float, samples: int, *, at: float | None = None) -> None:
    with _lock:
        _known[model] = (ratio, samples, time.monotonic() if at is None else at)
