"""A person's real git, as the tests of the git remote drive it: no global or system
config of this machine, never a prompt for credentials, a name of its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def person_git(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "HOME": str(home),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Person",
           "GIT_AUTHOR_EMAIL": "person@example.com", "GIT_COMMITTER_NAME": "Person",
           "GIT_COMMITTER_EMAIL": "person@example.com"}

    def run(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done

    run.env = env  # type: ignore[attr-defined]
    return run


def remote_url(server_url: str, slug: str, token: str | None = None, user: str = "person") -> str:
    host = server_url.removeprefix("http://")
    credentials = f"{user}:{token}@" if token else ""
    return f"http://{credentials}{host}/rooms/{slug}.git"
