"""The Celery app. Tasks are thin adapters: load by id, call one service."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hub.settings")

app = Celery("atrium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
