"""Is requirements.lock up to date with pyproject.toml? Standard library only, no network.

Every requirement pyproject.toml names (dependencies and every extra) must be in the lock
at the version pyproject pins, and every package the lock records as wanted by
pyproject.toml must still be named there. Run by .ci/run before installing and by
tests/test_dependencies.py; on a mismatch, `.ci/lock` regenerates the lock.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT_VIA = "(pyproject.toml)"  # how uv's annotations name the project
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==\s*([^\s;]+))?")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_requirements(pyproject: dict) -> dict[str, set[str | None]]:
    """{package: {pinned versions}} over dependencies and every extra; None when unpinned.
    The project's own extras (`atrium[embedded]`) are not packages to lock."""
    project = pyproject["project"]
    lines = [*project.get("dependencies", [])]
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    wanted: dict[str, set[str | None]] = {}
    for line in lines:
        match = _REQUIREMENT.match(line)
        if not match or normalize(match[1]) == normalize(project["name"]):
            continue
        wanted.setdefault(normalize(match[1]), set()).add(match[2])
    return wanted


def locked(lock_text: str) -> tuple[dict[str, set[str]], set[str]]:
    """({package: {locked versions}}, {packages the lock says pyproject.toml wants})."""
    versions: dict[str, set[str]] = {}
    direct: set[str] = set()
    current = None
    for line in lock_text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith(" "):  # an annotation of the package above
            if current and PROJECT_VIA in line:
                direct.add(current)
            continue
        match = _REQUIREMENT.match(line)
        if match and match[2]:
            current = normalize(match[1])
            versions.setdefault(current, set()).add(match[2])
    return versions, direct


def problems(pyproject: dict, lock_text: str) -> list[str]:
    wanted = pyproject_requirements(pyproject)
    versions, direct = locked(lock_text)
    found = []
    for name, pins in sorted(wanted.items()):
        if name not in versions:
            found.append(f"{name} is in pyproject.toml but not in requirements.lock")
        elif pins - {None} - versions[name]:
            found.append(f"{name}: pyproject.toml pins {', '.join(sorted(pins - {None}))}, "
                         f"requirements.lock has {', '.join(sorted(versions[name]))}")
    found.extend(f"{name} is locked for pyproject.toml, which no longer names it"
                 for name in sorted(direct - wanted.keys()))
    return found


def main() -> int:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = problems(pyproject, (ROOT / "requirements.lock").read_text())
    for problem in found:
        print(f"requirements.lock is out of date: {problem}", file=sys.stderr)
    if found:
        print("Regenerate it with .ci/lock and commit it.", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
