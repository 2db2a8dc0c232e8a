#!/usr/bin/env python3
"""Container healthchecks: ``atrium-healthcheck web|worker|beat``; exit 0 when healthy.

web:    Daphne answers /healthz (200 or 503: the web process itself is serving; the
        body says which dependency is down, and the worker has its own check).
worker: this container's Celery node answers a ping through the broker.
beat:   the beat process named in its pid file is alive.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request


def web() -> bool:
    # Django checks the Host header: send one ALLOWED_HOSTS accepts.
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = next((h.lstrip(".") for h in hosts if h != "*"), "localhost")
    request = urllib.request.Request("http://127.0.0.1:8000/healthz", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except urllib.error.HTTPError as error:
        return error.code == 503
    except OSError:
        return False


def worker() -> bool:
    node = f"celery@{socket.gethostname()}"
    result = subprocess.run(
        ["celery", "-A", "hub", "inspect", "ping", "--destination", node, "--timeout", "5"],
        capture_output=True, timeout=30,
    )
    return result.returncode == 0


def beat() -> bool:
    try:
        with open("/tmp/celerybeat.pid", encoding="ascii") as handle:
            os.kill(int(handle.read().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    checks = {"web": web, "worker": worker, "beat": beat}
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        sys.exit(f"usage: atrium-healthcheck {'|'.join(checks)}")
    sys.exit(0 if checks[sys.argv[1]]() else 1)
