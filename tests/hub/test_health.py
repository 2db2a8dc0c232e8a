"""/healthz answers 200 only when the database, Redis and a real Celery worker answer."""

from __future__ import annotations

import pytest
from django.test import Client


def healthz(client: Client):
    response = client.get("/healthz")
    return response.status_code, response.json()


def test_healthz_is_200_when_database_redis_and_a_worker_answer(celery_worker):
    status, body = healthz(Client())
    assert status == 200, body
    assert body["status"] == "ok"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True, "redis": True, "celery": True,
    }
    assert body["checks"]["celery"]["detail"].endswith("worker(s)")


@pytest.mark.django_db
def test_healthz_is_503_when_no_worker_answers():
    status, body = healthz(Client())
    assert status == 503
    assert body["status"] == "degraded"
    assert body["checks"]["celery"] == {"ok": False, "detail": "no worker answered"}
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"]


@pytest.mark.django_db
def test_healthz_is_503_when_redis_does_not_answer(settings, tmp_path):
    settings.REDIS_URL = f"unix://{tmp_path / 'nothing-listens-here.sock'}"
    status, body = healthz(Client())
    assert status == 503
    assert body["checks"]["redis"]["ok"] is False
    assert "Error" in body["checks"]["redis"]["detail"]


def test_healthz_needs_no_login_and_only_answers_get(db):
    client = Client()
    assert client.get("/healthz").status_code in (200, 503)  # not a redirect to the login page
    assert client.post("/healthz").status_code == 405
