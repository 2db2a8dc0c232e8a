"""Running git: one helper so every caller gets the same environment and errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Commits made by the hub itself (initial commits, intent files, merges).
HUB_IDENTITY = {
    "GIT_AUTHOR_NAME": "Atrium",
    "GIT_AUTHOR_EMAIL": "atrium@localhost",
    "GIT_COMMITTER_NAME": "Atrium",
    "GIT_COMMITTER_EMAIL": "atrium@localhost",
}


class GitError(RuntimeError):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.args_list = args
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} failed ({returncode}): {self.stderr}")


def git(*args: str, cwd: Path | str, check: bool = True, timeout: float = 120) -> str:
    """Run ``git args`` in ``cwd`` and return its stdout; raise GitError on failure."""
    env = {
        **os.environ,
        **HUB_IDENTITY,
        "GIT_TERMINAL_PROMPT": "0",  # never hang waiting for credentials
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    completed = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and completed.returncode != 0:
        raise GitError(list(args), completed.returncode, completed.stderr)
    return completed.stdout
