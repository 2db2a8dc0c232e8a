"""The hub's pre-receive check is the only thing between a push and the room: where it
cannot run as written, no push is taken (git would skip a hook it cannot run)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from remote.smart_http import PRE_RECEIVE, HookUnusable, push_hooks


def test_a_changed_hook_stops_the_push_at_hand_and_is_written_again(tmp_path):
    folder = push_hooks(tmp_path / "hooks")
    hook = folder / "pre-receive"
    assert hook.read_text() == PRE_RECEIVE and os.access(hook, os.X_OK)
    assert [path.name for path in folder.iterdir()] == ["pre-receive"]  # no partial left
    for change in (lambda: hook.write_text("#!/bin/sh\nexit 0\n"), lambda: hook.chmod(0o644)):
        change()
        with pytest.raises(HookUnusable):
            push_hooks(folder)
        assert push_hooks(folder) == folder  # the next push writes it again
        assert hook.read_text() == PRE_RECEIVE and os.access(hook, os.X_OK)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a tmpfs")
def test_a_data_folder_mounted_noexec_takes_no_push(tmp_path):
    mounted = tmp_path / "noexec"
    mounted.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=1m", "tmpfs", str(mounted)], check=True)
    try:
        with pytest.raises(HookUnusable, match="noexec"):
            push_hooks(mounted / "hooks")
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
