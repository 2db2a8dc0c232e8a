"""A hub that runs as an ordinary user, as the Docker image's does: run by the tests with
the system's interpreter under ``setpriv`` (pyenv's lives under /root, which the user
cannot enter, and the project's packages are not installed for it), so it loads the
sandbox's own modules from their files and confines commands the way a session does.

``python3 as_an_ordinary_user.py SPEC`` with SPEC a JSON object:
``{"places": [{"worktree", "tmp", "group", "network"}, ...], "limits": {"processes",
"memory_bytes", "cpus"}, "background": [[place, command], ...], "settle": seconds,
"commands": [[place, command], ...]}``. It prints one JSON object: the hub's uid, whether
its rooms get control groups, and each command's exit status and output (background
commands started first and stopped after the others, ``settle`` seconds apart).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def load_sandbox() -> types.ModuleType:
    """agents.tools.sandbox without the package's __init__ (which needs the hub's packages)."""
    for package in ("agents", "agents.tools"):
        module = types.ModuleType(package)
        module.__path__ = [str(CHECKOUT / package.replace(".", "/"))]
        sys.modules[package] = module
    sys.path.insert(0, str(CHECKOUT))
    for name in ("agents.tools._confiner", "agents.tools.sandbox"):
        spec = importlib.util.spec_from_file_location(name, CHECKOUT / (name.replace(".", "/") + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules["agents.tools.sandbox"]


def main() -> None:
    spec = json.loads(sys.argv[1])
    sys.path[:0] = spec.get("python_path", [])
    sandbox = load_sandbox()
    handover = sys.modules["agents.tools.handover"]  # loaded by the sandbox module
    limits = sandbox.RoomLimits(**spec["limits"]) if spec.get("limits") else sandbox.RoomLimits()
    policy = sandbox.SandboxPolicy(room_limits=limits)
    problem = sandbox.availability(policy)
    if problem:
        raise SystemExit(f"no sandbox as an ordinary user: {problem}")
    places = [sandbox.Place(worktree=Path(p["worktree"]), tmp=Path(p["tmp"]), group=p.get("group", ""),
                            network=p.get("network", False)) for p in spec["places"]]
    for place in places:
        handover.prepare(policy, place)

    def start(index: int, command: str) -> subprocess.Popen:
        confined = sandbox.confine(policy, places[index], command)
        with sandbox.launched(confined) as (argv, pass_fds):
            return subprocess.Popen(argv, env=confined.env, cwd=confined.cwd, pass_fds=pass_fds,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    background = [start(index, command) for index, command in spec.get("background", [])]
    time.sleep(spec.get("settle", 0))
    results = []
    for index, command in spec["commands"]:
        process = start(index, command)
        out, _ = process.communicate(timeout=120)
        results.append({"code": process.returncode, "out": out})
    for process in background:
        try:
            out, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
        results.append({"code": process.returncode, "out": out})
    print(json.dumps({"uid": os.geteuid(), "drops_user": policy.drops_user,
                      "room_groups": sandbox.cgroups_usable(policy.cgroup_root), "results": results}))


if __name__ == "__main__":
    main()
