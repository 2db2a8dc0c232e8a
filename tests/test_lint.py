"""The code passes the project's linters (pyproject.toml [tool.ruff] and [tool.importlinter]):
an undefined name in a branch no test happened to take, or an import against the layering,
is caught here, not by a person."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


# --- the layering (pyproject.toml [tool.importlinter], docs/architecture.md "Layers") ---------

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
APPS = ("hub", "endpoint", "evals", "sessions", "rooms", "agents", "observations")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    # PYTHONPATH first: grimp must read the packages under ``root``, not the installed ones.
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(root)})


def test_every_import_contract_is_kept():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    # A reverse import hidden in a function still counts.
    ("rooms/selectors.py", "def _reverse():\n    from sessions.models import Session  # noqa\n",
     "Apps import only downwards"),
    ("agents/models.py", "import rooms.models  # noqa\n", "Apps import only downwards"),
    ("sessions/models/work.py", "import endpoint.models  # noqa\n", "Apps import only downwards"),
    ("observations/gateway/budget.py", "import django.db  # noqa\n", "The gateway core is plain Python"),
    ("sessions/runtime/loop.py", "import django.db  # noqa\n", "The session's plain runtime"),
    ("sessions/services/lifecycle.py", "def _cycle():\n    from sessions.tasks import run_session  # noqa\n",
     "A session's run imports one way"),
])
def test_an_import_against_the_layering_breaks_its_contract(tmp_path, module, line, contract):
    for app in APPS:
        shutil.copytree(ROOT / app, tmp_path / app, ignore=shutil.ignore_patterns(
            "__pycache__", "templates", "static", "fixtures", "demo_repo", "scenarios"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    assert _lint_imports(tmp_path).returncode == 0  # the copy keeps them, like the original
    with (tmp_path / module).open("a") as handle:
        handle.write("\n\n" + line)
    done = _lint_imports(tmp_path)
    assert done.returncode != 0
    assert f"{contract}" in done.stdout and "BROKEN" in done.stdout.split(contract, 1)[1].splitlines()[0], done.stdout


# --- size: a module past 400 lines, or a class past 250, usually does two jobs -----------------

MAX_MODULE_LINES, MAX_CLASS_LINES = 400, 250


def _sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not {".venv", ".ci", "migrations", ".git"} & set(p.parts)
                  and p.name != "settings.py")


def test_no_module_or_class_is_too_long():
    import ast

    too_long = []
    for path in _sources():
        text = path.read_text()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and (span := node.end_lineno - node.lineno + 1) > MAX_CLASS_LINES:
                too_long.append(f"{path.relative_to(ROOT)}: class {node.name}, {span} lines")
    assert too_long == []
