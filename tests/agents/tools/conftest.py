"""A worktree-like folder and a ToolBox over it, with short bounds so the suite stays fast."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.tools import ToolBox, ToolOutcome
from observations.gateway.messages import ToolCall

YIELD_SOON = 0.5  # seconds: how soon a test of yielding gets its job handle

_ids = itertools.count(1)


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(id=f"call-{next(_ids)}", name=name, arguments=arguments)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "worktree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".atrium" / "tasks" / "1").mkdir(parents=True)
    (root / ".atrium" / "tasks" / "1" / "intent.md").write_text("# Intent\n")
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "jobs" / "session-1"


@pytest.fixture
def make_box(worktree: Path, state_dir: Path) -> Callable[..., ToolBox]:
    """A box that waits for a command up to 30 s, a bound no loaded machine misses for
    one that ends at once; a test of yielding asks for ``yield_seconds=YIELD_SOON``."""

    def make(**overrides) -> ToolBox:
        options = {"worktree": worktree, "state_dir": state_dir, "yield_seconds": 30}
        options.update(overrides)
        return ToolBox(**options)

    return make


@pytest.fixture
def box(make_box) -> ToolBox:
    return make_box()


@pytest.fixture
def run(box: ToolBox) -> Callable[..., ToolOutcome]:
    """Execute one call of ``name`` with fresh id on the default box."""

    def execute(name: str, **arguments) -> ToolOutcome:
        return box.execute(call(name, **arguments))

    return execute
