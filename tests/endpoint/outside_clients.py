"""What the tests of clients nobody here wrote share (Codex CLI, Claude Code): the
client's command or the test skipped, and an environment with no way off the machine."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REQUIRE = os.environ.get("ATRIUM_REQUIRE_REAL_SERVICES") == "1"


def installed(command: Path, missing: str) -> Path:
    """``command``, or the test skipped: failed in CI, where .ci/run installs it."""
    if not command.exists():
        if REQUIRE:
            pytest.fail(missing)
        pytest.skip(missing)
    return command


@contextmanager
def no_way_out() -> Iterator[dict[str, str]]:
    """Proxy variables that all name a listening socket of the test's: anything the client
    tried outside the hub would knock on it, and after the block nothing has."""
    with socket.create_server(("127.0.0.1", 0)) as trap:
        trap.setblocking(False)
        proxy = f"http://127.0.0.1:{trap.getsockname()[1]}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
        yield {**dict.fromkeys(names, proxy), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        with pytest.raises(BlockingIOError):
            trap.accept()  # nothing tried to leave the machine
