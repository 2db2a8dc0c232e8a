"""The step loop's own state against the dict it was saved as."""

from __future__ import annotations

from sessions.runtime.loop_state import RuntimeState


def test_a_restored_state_shares_nothing_with_its_saved_dict():
    """The worker skips the save of an unchanged runtime state by comparing it with the
    dict it was restored from: an append to a shared list changed both, and a nudge or a
    loop alarm given in the first unit after a resume was never saved."""
    saved = {"nudged": ["no_edits"], "loop_alarms": [], "held_jobs": ["j1"],
             "calls": [{"id": "c1", "name": "shell", "arguments": {"command": "ls"}}], "next_call": 0}
    state = RuntimeState.from_dict(saved)
    state.nudged.append("no_verify")
    state.held_jobs.append("j2")
    state.calls[0]["arguments"]["command"] = "pwd"
    assert state.to_dict() != saved
    assert saved["nudged"] == ["no_edits"] and saved["held_jobs"] == ["j1"]
    assert saved["calls"][0]["arguments"] == {"command": "ls"}
