"""The hub's sandbox policy, read from settings once per process; agents.tools.sandbox
does the confining. Also what pages and logs say about it."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import logging
import os
import sysconfig
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agents.tools.sandbox import (
    HOW_TO_ENABLE,
    Limits,
    RoomLimits,
    SandboxPolicy,
    availability,
    cgroups_usable,
    interpreter_policy,
)

log = logging.getLogger(__name__)

HUB_PACKAGES = ("hub", "rooms", "agents", "observations")
OPT_OUT_WARNING = ("The sandbox is OFF (ATRIUM_SANDBOX=off): agents' commands and room checks run "
                   "unconfined, as the hub's user, and can read everything it can (its data folder, "
                   "database and the processes' environments included).")
NO_ROOM_GROUPS_WARNING = ("This hub may not make control groups for its rooms: their commands share its own "
                          "process and memory limits, so one room's fork bomb can hold the processes of all. "
                          "Run it as root (on cgroup v2, with pids, memory and cpu delegated at the root), or "
                          "give it an `atrium` folder in each cgroup v1 controller "
                          "(docs/operations.md, \"Room limits for a hub that is not root\").")


@lru_cache(maxsize=1)
def sandbox_policy() -> SandboxPolicy:
    base = interpreter_policy()
    policy = dataclasses.replace(
        base,
        enabled=settings.ATRIUM_SANDBOX != "off",
        uid=settings.ATRIUM_SANDBOX_UID,
        gid=settings.ATRIUM_SANDBOX_GID,
        limits=Limits(cpu_seconds=settings.ATRIUM_SANDBOX_CPU_SECONDS,
                      memory_bytes=settings.ATRIUM_SANDBOX_MEMORY_MB << 20,
                      processes=settings.ATRIUM_SANDBOX_PROCESSES,
                      file_bytes=settings.ATRIUM_SANDBOX_FILE_MB << 20,
                      worktree_bytes=settings.ATRIUM_WORKTREE_MAX_MB << 20,
                      output_bytes=settings.ATRIUM_COMMAND_OUTPUT_MB << 20),
        room_limits=RoomLimits(processes=settings.ATRIUM_ROOM_PROCESSES,
                               memory_bytes=settings.ATRIUM_ROOM_MEMORY_MB << 20, cpus=settings.ATRIUM_ROOM_CPUS),
        read_only=(*base.read_only, *settings.ATRIUM_SANDBOX_READ_ONLY),
        hidden=tuple(sorted({str(settings.DATA_DIR), *hub_package_dirs()})),
        passed_env=tuple((name, os.environ[name]) for name in settings.ATRIUM_SANDBOX_PASS_ENV
                         if name in os.environ),
    )
    if not policy.enabled:
        log.warning(OPT_OUT_WARNING)
    elif not cgroups_usable(policy.cgroup_root):
        log.warning(NO_ROOM_GROUPS_WARNING)
    return policy


UID_MAX = 2**32 - 2


def room_control_group(room_pk: int, repo_path: str) -> str:
    """The room's control group, named by its repository too: two hubs on one machine
    (or two test workers) have rooms with the same ids, never the same limits."""
    return f"room-{room_pk}-{hashlib.sha256(f'{room_pk}:{repo_path}'.encode()).hexdigest()[:10]}"


def room_uid(room_pk: int) -> int | None:
    """The room's own user on the machine (the hub is root): ATRIUM_ROOM_UID_BASE plus
    its id, so the per-user limits and the files of one room are not another's (two hubs
    on one machine take bases far apart). None (ATRIUM_ROOM_UID_BASE=0): every room runs
    as ATRIUM_SANDBOX_UID."""
    base = settings.ATRIUM_ROOM_UID_BASE
    if not base:
        return None
    if base + room_pk > UID_MAX:
        raise ImproperlyConfigured(f"ATRIUM_ROOM_UID_BASE {base} + room {room_pk} passes the largest uid, {UID_MAX}")
    return base + room_pk


def hub_package_dirs() -> set[str]:
    """Where the hub's own packages are, wherever an interpreter could show them: the
    sandbox shows the interpreter's packages but never these."""
    found = set()
    libs = {sysconfig.get_paths(vars=v)[k] for v in ({}, {"base": sysconfig.get_config_var("installed_base")})
            for k in ("purelib", "platlib")}
    for name in HUB_PACKAGES:
        spec = importlib.util.find_spec(name)
        found.update(str(Path(p).resolve()) for p in (spec.submodule_search_locations or ()) if spec)
        found.update(str(Path(lib, name).resolve()) for lib in libs if Path(lib, name).is_dir())
    return found


def sandbox_notice() -> str:
    """What every page says about the sandbox: the opt-out, or why commands are refused."""
    policy = sandbox_policy()
    if not policy.enabled:
        return OPT_OUT_WARNING
    problem = availability(policy)
    if problem:
        return f"Commands are refused: no sandbox is available on this machine ({problem}). {HOW_TO_ENABLE}"
    return ""
