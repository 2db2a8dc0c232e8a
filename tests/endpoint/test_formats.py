"""A wire format is one module and one row: the endpoint's other modules, and the
providers' factory, hold no switch on a format's or a provider's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agents.providers.factory import PROVIDER_KINDS
from endpoint.formats import FORMATS, WireFormat, of_provider

ROOT = Path(__file__).resolve().parents[2]
NAMES = {*FORMATS, *PROVIDER_KINDS}
SWITCH_FREE = sorted([*(ROOT / "endpoint").glob("**/*.py"), ROOT / "agents" / "providers" / "factory.py"])


@pytest.mark.parametrize("module", SWITCH_FREE, ids=lambda path: path.name)
def test_no_module_outside_the_formats_compares_a_formats_name(module):
    switches = [f"{module.name}:{node.lineno}" for node in ast.walk(ast.parse(module.read_text()))
                if isinstance(node, ast.Compare)
                and any(isinstance(part, ast.Constant) and part.value in NAMES
                        for part in (node.left, *node.comparators))]
    assert not switches, f"a per-format switch: {switches}; put what differs in endpoint/formats/"


def test_every_format_is_registered_under_its_name_and_every_provider_kind_has_one():
    assert all(isinstance(wire_format, WireFormat) and name == wire_format.name for name, wire_format in FORMATS.items())
    assert all(of_provider(kind).name == kind for kind in PROVIDER_KINDS)
