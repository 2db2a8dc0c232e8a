"""The gateway core is plain Python: importing it must not import Django."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import observations.gateway

CORE = Path(observations.gateway.__file__).parent


def test_no_module_of_the_gateway_core_imports_django():
    offenders = []
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in {"django", "rooms", "agents"}]
    assert offenders == []


def test_importing_every_core_module_leaves_django_unloaded():
    modules = sorted(f"observations.gateway.{p.stem}" for p in CORE.glob("*.py") if p.stem != "__init__")
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CORE.parent.parent)
    assert out.stdout.strip() == "False"
