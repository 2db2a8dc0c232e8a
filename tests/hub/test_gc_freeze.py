"""A hub process's startup objects are frozen out of the garbage collector's reach
(hub.gc_freeze): the web process once its app and views are loaded, a worker's when
its processes start. (What a full collection cost before: the module's docstring.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT, hub_process_env


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=hub_process_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_web_process_freezes_its_startup_objects_its_views_among_them():
    frozen, views = _run("import gc, sys, hub.asgi; print(gc.get_freeze_count(), 'endpoint.views.api' in sys.modules)")
    assert int(frozen) > 100_000 and views == "True"


@pytest.mark.parametrize("signal", ["worker_init", "worker_process_init"])
def test_a_worker_freezes_its_startup_objects_in_its_own_process_and_each_of_its_pools(signal):
    before, after = map(int, _run(
        f"import gc, django, hub.celery; django.setup(); from celery.signals import {signal}; "
        f"print(gc.get_freeze_count()); {signal}.send(sender=None); print(gc.get_freeze_count())"))
    assert before == 0 and after > 50_000
