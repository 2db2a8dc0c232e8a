"""room_status over a room seen through a fake view: the first call says everything, a
later call only what changed, and the notes carry over to a resumed session."""

from __future__ import annotations

from dataclasses import replace

from agents.tools.box import ToolBox
from agents.tools.room import (
    MergeLine,
    RoomSnapshot,
    SessionLine,
    TaskLine,
    render_changes,
    room_changes,
    room_status,
)
from observations.gateway.messages import ToolCall

ALICE = SessionLine(id=8, agent="alice", task_id=2, task="Add mode", state="running", files=("stats.py",))
BASE = RoomSnapshot(session_id=7, task_id=1, main="a" * 40,
                    tasks=(TaskLine(1, "Fix median"), TaskLine(2, "Add mode")), sessions=(ALICE,))


class FakeRoom:
    def __init__(self, snapshot: RoomSnapshot, notes: dict | None = None) -> None:
        self.current, self.notes = snapshot, notes if notes is not None else {}

    def snapshot(self) -> RoomSnapshot:
        return self.current

    def load_notes(self) -> dict:
        return dict(self.notes)

    def save_notes(self, notes: dict) -> None:
        self.notes.clear()
        self.notes.update(notes)


def test_nothing_changed_between_equal_snapshots():
    assert room_changes(BASE, BASE).empty


def test_changes_name_new_tasks_sessions_states_files_and_merges():
    bob = SessionLine(id=9, agent="bob", task_id=3, task="Docs", state="queued")
    merge = MergeLine(sha="b" * 40, subject="Merge atrium/session-6: Add mean", files=("stats.py", "tests/t.py"))
    later = replace(BASE, main="b" * 40, tasks=(TaskLine(1, "Fix median"), TaskLine(3, "Docs")),
                    sessions=(replace(ALICE, state="waiting", files=("stats.py", "mode.py")), bob), merges=(merge,))
    changes = room_changes(BASE, later)
    assert [t.id for t in changes.tasks_opened] == [3] and [t.id for t in changes.tasks_closed] == [2]
    assert changes.sessions_started == (bob,) and not changes.sessions_ended
    assert [(s.id, old) for s, old in changes.states] == [(8, "running")]
    assert [(s.id, files) for s, files in changes.files_added] == [(8, ("mode.py",))]
    assert changes.merges == (merge,)
    text = render_changes(changes, later)
    assert "- session 8 (alice on task 2 'Add mode'): running -> waiting" in text
    assert "also changed: mode.py" in text and "merged into main: bbbbbbbbbb Merge atrium/session-6" in text
    assert "task closed: task 2 'Add mode'" in text
    assert "The rest is as your last room_status said" in text


def test_a_session_that_ended_and_a_merge_seen_before_are_reported_once():
    merge = MergeLine(sha="c" * 40, subject="Merge x", files=("a.py",))
    first = replace(BASE, merges=(merge,))
    later = replace(BASE, sessions=(), merges=(merge,))
    changes = room_changes(first, later)
    assert changes.sessions_ended == (ALICE,) and changes.merges == ()


def test_the_first_call_says_everything_and_the_second_only_what_changed():
    room = FakeRoom(BASE)
    first = room_status(room, call_id="c1")
    assert "Open tasks (2):\n- task 1 'Fix median' (yours)\n- task 2 'Add mode'" in first.text
    assert "- session 8 (alice on task 2 'Add mode'): running; changed: stats.py" in first.text
    assert "Merged into main since you started (0):\n- nothing" in first.text
    second = room_status(room, call_id="c2")
    assert second.text.startswith("Room status: nothing changed since your last room_status")
    assert len(second.text) < len(first.text) / 2
    room.current = replace(BASE, sessions=(replace(ALICE, files=("stats.py", "mode.py")),))
    third = room_status(room, call_id="c3")
    assert "also changed: mode.py" in third.text and "Open tasks" not in third.text


def test_a_call_run_again_after_a_crash_compares_with_the_call_before_it():
    room = FakeRoom(BASE)
    room_status(room, call_id="c1")
    room.current = replace(BASE, tasks=BASE.tasks + (TaskLine(4, "Lint"),))
    once = room_status(room, call_id="c2")
    again = room_status(room, call_id="c2")  # the outcome was never recorded: run again
    assert "new task: task 4 'Lint'" in once.text and again.text == once.text


def test_a_resumed_session_reads_the_notes_its_last_call_left(tmp_path):
    notes: dict = {}
    room_status(FakeRoom(BASE, notes), call_id="c1")
    resumed = FakeRoom(replace(BASE, main="d" * 40), notes)  # another worker, the same stored notes
    box = ToolBox(worktree=tmp_path, state_dir=tmp_path / "state", room_view=resumed)
    outcome = box.execute(ToolCall("c2", "room_status", {}))
    assert not outcome.is_error
    assert outcome.text.startswith("Room status: nothing changed since your last room_status (main at dddddddddd")


def test_without_a_room_the_tool_says_so(tmp_path):
    box = ToolBox(worktree=tmp_path, state_dir=tmp_path / "state")
    outcome = box.execute(ToolCall("c1", "room_status", {}))
    assert outcome.is_error and "no room" in outcome.text


def test_long_file_lists_are_cut_and_counted():
    many = replace(ALICE, files=tuple(f"f{n}.py" for n in range(40)))
    text = room_status(FakeRoom(replace(BASE, sessions=(many,))), call_id="c1").text
    assert "f24.py (+15 more)" in text and "f25.py" not in text


def test_long_lists_of_tasks_and_sessions_are_cut_and_counted():
    tasks = tuple(TaskLine(n, f"Task {n}") for n in range(1, 41))
    sessions = tuple(replace(ALICE, id=100 + n, agent=f"agent{n}") for n in range(35))
    text = room_status(FakeRoom(replace(BASE, tasks=tasks, sessions=sessions)), call_id="c1").text
    assert "Open tasks (40):" in text and "Task 30" in text and "Task 31" not in text
    assert "(10 more open tasks not shown)" in text and "(5 more live sessions not shown)" in text


def test_snapshots_survive_their_json_form():
    snapshot = replace(BASE, merges=(MergeLine("e" * 40, "Merge y", ("a.py",)),))
    assert RoomSnapshot.from_dict(snapshot.to_dict()) == snapshot
