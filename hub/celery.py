"""The Celery app. Tasks are thin adapters: load by id, call one service."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

from hub.gc_freeze import freeze_startup_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hub.settings")

app = Celery("atrium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect  # the worker's own process: what a pool's processes are forked from
@worker_process_init.connect  # each pool process, once it has started
def _freeze_startup_objects(**_) -> None:
    freeze_startup_objects()
