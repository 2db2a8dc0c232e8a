"""Running git: the one place the hub starts git, so every call gets the same hardened
environment and errors.

The hub runs git outside the sandbox on repositories whose content an agent or an
uploaded bundle controls: files, ``.gitattributes``, ``.gitmodules``, nested
repositories with configs of their own. Whatever git could be told to run from there
is turned off here, for this git and every git it starts (submodule probes inherit the
``GIT_CONFIG_*`` settings): no system or global config, no hooks, no fsmonitor, no
look into submodules, no external diff, text conversion, pager or editor, no ``ext::``
transport. Nothing else in the hub calls ``git``.
"""

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


# Settings that win over every config file git reads, the repository's included.
HARDENED_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "ssh -oBatchMode=yes"),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("protocol.ext.allow", "never"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),  # no detached maintenance outliving the call
    ("maintenance.auto", "false"),
    ("safe.directory", "*"),  # worktrees belong to the sandbox user; the hub names each repository itself
)
# Variables of the hub's environment that would point git elsewhere or run something.
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH",
            "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_NAMESPACE",
            "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_PROXY_COMMAND")


def hardened_env() -> dict[str, str]:
    """The environment every git the hub starts runs with."""
    env = {name: value for name, value in os.environ.items()
           if name not in _DROPPED and not name.startswith("GIT_CONFIG_")}
    env.update(HUB_IDENTITY)
    env.update({
        "GIT_TERMINAL_PROMPT": "0",  # never hang waiting for credentials
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "false",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_CONFIG_COUNT": str(len(HARDENED_CONFIG)),
    })
    for index, (key, value) in enumerate(HARDENED_CONFIG):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def git(*args: str, cwd: Path | str, check: bool = True, timeout: float = 120) -> str:
    """Run ``git args`` in ``cwd`` and return its stdout; raise GitError on failure."""
    completed = subprocess.run(
        ["git", "--no-pager", *args],
        cwd=cwd,
        env=hardened_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and completed.returncode != 0:
        raise GitError(list(args), completed.returncode, completed.stderr)
    return completed.stdout
