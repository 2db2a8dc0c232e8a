from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clone_roots(settings):
    """Most room tests copy repositories from temporary folders: an operator who lists the
    whole machine. The hub's data folder stays refused whatever is listed; tests of the
    list itself set their own."""
    settings.ATRIUM_CLONE_ROOTS = [Path("/")]
    return settings
