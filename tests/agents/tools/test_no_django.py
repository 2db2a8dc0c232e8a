"""The tools are plain Python: usable (and testable) without Django or a database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def test_importing_the_tools_leaves_django_unloaded():
    modules = sorted(
        f"agents.tools.{p.stem}" for p in (PROJECT_ROOT / "agents" / "tools").glob("*.py")
        if not p.stem.startswith("_")
    )
    assert "agents.tools.box" in modules
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('django' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "False"
