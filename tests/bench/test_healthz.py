"""Benchmark: how long /healthz takes with a real worker up (issue 30: ≥ 2.1 s, the
Celery check waiting out its whole timeout for replies that had all come).

Run: ./.venv/bin/pytest -m bench tests/bench/test_healthz.py -s

The baseline, in the same run: the check as it was, waiting the timeout out.
"""

from __future__ import annotations

import statistics
import time
from unittest import mock

import pytest
from django.test import Client

from hub import health

pytestmark = [pytest.mark.bench]
ROUNDS = 5


def seconds_per_healthz(client: Client) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.monotonic()
        assert client.get("/healthz").status_code == 200
        times.append(time.monotonic() - started)
    return statistics.median(times)


def test_healthz_answers_once_every_worker_has(celery_worker):
    client = Client()
    now = seconds_per_healthz(client)
    with mock.patch.object(health, "_workers_listening", return_value=0):  # as before: no limit
        before = seconds_per_healthz(client)
    print(f"\n/healthz median of {ROUNDS}: {now * 1000:.0f} ms; waiting the timeout out: {before * 1000:.0f} ms; "
          f"ratio {now / before:.3f}")
