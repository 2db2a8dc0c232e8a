"""Who runs a session, and whether that worker is known to be dead.

A lease names its owner ``host:pid:nonce``. On the owner's machine a missing (or
zombie) pid proves the worker died, so its session can be taken at once; elsewhere
only the lease running out (missed heartbeats) tells.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_owner_gone(owner: str) -> bool:
    """Whether the process named by ``owner`` ran on this machine and is gone. A reused
    pid only makes a dead worker look alive (then its lease runs out): never the reverse."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Exited but not yet reaped by its parent (the Celery main process) is gone too.
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
