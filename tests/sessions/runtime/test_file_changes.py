"""Which files a command changed, from two readings of the worktree (plain data): every
kind of change, a rename known by its content, a file made and removed again, the
agent's own commit, and what a session's records leave changed."""

from __future__ import annotations

import pytest

from sessions.runtime.file_changes import FileChange, Reading, changes_between, paths_changed

HEAD_CONTENT = {"app.py": "sha-app", "old.py": "sha-old", "keep.py": "sha-keep"}
COMMITTED = {"made.py": "sha-made"}  # what the agent's own commit added


def _now(path: str) -> str:  # a path not in the reading: what HEAD holds now, or nothing
    return {**HEAD_CONTENT, **COMMITTED}.get(path, "")


def _before(path: str) -> str:
    return HEAD_CONTENT.get(path, "")


def _changes(before: Reading, dirty: dict, head: str = "h1", moved=()):
    return changes_between(before, head, dirty, moved=moved, content_now=_now, content_before=_before)


def test_a_clean_file_changed_a_new_file_and_a_removed_one():
    changes, reading = _changes(Reading("h1", {}), {"app.py": (True, "sha-app-2"), "new.py": (False, "sha-new"),
                                                    "keep.py": (True, "")})
    assert changes == [FileChange("app.py", "modified", "sha-app-2"), FileChange("keep.py", "deleted", ""),
                       FileChange("new.py", "added", "sha-new")]
    assert reading == Reading("h1", {"app.py": "sha-app-2", "new.py": "sha-new", "keep.py": ""})


def test_nothing_changed_since_the_last_reading_is_no_change():
    before = Reading("h1", {"app.py": "sha-app-2"})
    assert _changes(before, {"app.py": (True, "sha-app-2")})[0] == []


def test_a_file_changed_again_and_one_put_back_as_head_has_it():
    before = Reading("h1", {"app.py": "sha-app-2", "keep.py": "sha-keep-2"})
    changes, _ = _changes(before, {"app.py": (True, "sha-app-3")})
    assert changes == [FileChange("app.py", "modified", "sha-app-3"), FileChange("keep.py", "modified", "sha-keep")]


def test_a_move_is_one_rename_known_by_its_content():
    changes, _ = _changes(Reading("h1", {}), {"old.py": (True, ""), "new/place.py": (False, "sha-old")})
    assert changes == [FileChange("new/place.py", "renamed", "sha-old", old_path="old.py")]


def test_a_file_made_and_removed_between_readings_is_no_change():
    assert _changes(Reading("h1", {"tmp.txt": ""}), {})[0] == []
    changes, _ = _changes(Reading("h1", {"tmp.txt": "sha-tmp"}), {})
    assert changes == [FileChange("tmp.txt", "deleted", "")]


def test_the_agents_own_commit_is_seen_through_the_move_of_head():
    # sed -i app.py && git commit -am …: clean before and after, but HEAD moved.
    changes, reading = _changes(Reading("h1", {}), {}, head="h2", moved=[("app.py", True), ("made.py", False)])
    assert changes == [FileChange("app.py", "modified", "sha-app"), FileChange("made.py", "added", "sha-made")]
    assert reading.head == "h2"


def test_a_reading_survives_its_round_trip_through_the_state():
    reading = Reading("h1", {"a": "x", "b": ""})
    assert Reading.from_dict(reading.to_dict()) == reading
    assert Reading.from_dict(None) is None


@pytest.mark.parametrize(("records", "expected"), [
    ([{"path": "a.py", "kind": "modified"}], ["a.py"]),
    ([{"path": "t.txt", "kind": "added"}, {"path": "t.txt", "kind": "deleted"}], []),
    ([{"path": "t.txt", "kind": "added"}, {"path": "t.txt", "kind": "modified"}], ["t.txt"]),
    ([{"path": "new.py", "kind": "renamed", "old_path": "old.py"}], ["new.py", "old.py"]),
    ([{"path": "b.py", "kind": "added"}, {"path": "c.py", "kind": "renamed", "old_path": "b.py"}], ["c.py"]),
    ([{"path": "gone.py", "kind": "deleted"}], ["gone.py"]),
    ([{"path": "x.py", "kind": "written", "inferred": True}], ["x.py"]),
    ([{"path": "a.py", "kind": "written"}, {"path": "a.py", "kind": "restored"}], []),
    ([{"path": "a.py", "kind": "restored"}, {"path": "a.py", "kind": "written"}], ["a.py"]),
    ([{"path": "d/x.py", "kind": "written"}, {"path": "d/y/z.py", "kind": "written"}, {"path": "keep/x.py",
      "kind": "written"}, {"path": "d", "kind": "deleted", "inferred": True}], ["keep/x.py"]),
    ([{"path": "tests/old", "kind": "deleted", "inferred": True}], ["tests/old"]),  # nothing known under it
    # A tracked folder the session wrote in, then removed: its name stands for the rest.
    ([{"path": "tests/new.py", "kind": "written"}, {"path": "tests/a.py", "kind": "modified"},
      {"path": "tests", "kind": "deleted", "inferred": True}], ["tests", "tests/a.py"]),
    ([{"path": "a.py", "kind": "restored"}, {"path": "a.py", "kind": "deleted", "inferred": True}], ["a.py"]),
    ([{"path": "a.py", "kind": "written"}, {"path": "a.py", "kind": "restored"},
      {"path": "a.py", "kind": "deleted", "inferred": True}], ["a.py"]),  # restored: it was in HEAD
    # git checkout . puts back what was there; a file the session made stays.
    ([{"path": "a.py", "kind": "modified"}, {"path": "new.py", "kind": "written"},
      {"path": ".", "kind": "restored", "inferred": True}], ["new.py"]),
    ([{"path": "x/a.py", "kind": "written"}, {"path": ".", "kind": "deleted", "inferred": True}], []),
])
def test_what_a_sessions_records_leave_changed(records, expected):
    assert paths_changed(records) == expected
