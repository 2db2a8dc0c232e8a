"""Every page says when agents' commands run unconfined (the operator's opt-out) or are
refused (no sandbox here), and how to enable one; all is quiet when the sandbox works."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agents import confinement
from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(settings):
    def render(**overrides) -> str:
        for name, value in overrides.items():
            setattr(settings, name, value)
        confinement.sandbox_policy.cache_clear()
        client = Client()
        client.force_login(make_user())
        try:
            return client.get(reverse("room_list")).content.decode()
        finally:
            confinement.sandbox_policy.cache_clear()

    return render


def test_no_notice_while_the_sandbox_works(page):
    assert 'id="sandbox-notice"' not in page()


def test_the_opt_out_is_announced_on_every_page(page):
    html = page(ATRIUM_SANDBOX="off")
    assert 'id="sandbox-notice"' in html and "The sandbox is OFF (ATRIUM_SANDBOX=off)" in html


def test_a_missing_sandbox_is_announced_with_how_to_enable_one(page, monkeypatch):
    real = confinement.sandbox_policy.__wrapped__

    def without_bwrap():
        import dataclasses

        return dataclasses.replace(real(), bwrap="/nonexistent/bwrap")

    monkeypatch.setattr(confinement, "sandbox_policy", without_bwrap)
    without_bwrap.cache_clear = lambda: None
    html = page()
    assert "Commands are refused: no sandbox is available on this machine" in html
    assert "apt-get install bubblewrap" in html


def test_a_hub_that_may_make_no_room_groups_says_so_in_its_log(monkeypatch, tmp_path, caplog):
    """Where no control group can be made (a cgroup mount with no controllers), every
    room's commands share the hub's limits: the operator reads why and what to do. Where
    they can (a v1 tree whose controllers, or their delegated ``atrium`` folders, this
    process may write), nothing is said."""
    import dataclasses
    import os

    from agents.tools._confiner import room_group

    real = confinement.interpreter_policy

    def logged(root) -> str:
        monkeypatch.setattr(confinement, "interpreter_policy", lambda: dataclasses.replace(real(), cgroup_root=str(root)))
        confinement.sandbox_policy.cache_clear()
        caplog.clear()
        try:
            with caplog.at_level("WARNING", logger="agents.confinement"):
                confinement.sandbox_policy()
        finally:
            confinement.sandbox_policy.cache_clear()
        return caplog.text

    empty = tmp_path / "empty"
    empty.mkdir()
    text = logged(empty)
    assert confinement.NO_ROOM_GROUPS_WARNING in text and "docs/operations.md" in text
    given = tmp_path / "given"
    for controller in ("pids", "memory", "cpu"):
        os.makedirs(os.path.dirname(room_group(str(given), controller, "-")))
    assert confinement.NO_ROOM_GROUPS_WARNING not in logged(given)
