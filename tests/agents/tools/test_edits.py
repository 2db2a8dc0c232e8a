"""write_file, edit_file and undo_edit."""

from __future__ import annotations

import hashlib
import os
import socket
import stat

from .conftest import call


def test_write_file_creates_parents_and_reports_the_new_fingerprint(run, worktree):
    outcome = run("write_file", path="pkg/sub/mod.py", content="x = 1\ny = 2\n")
    assert not outcome.is_error
    assert (worktree / "pkg" / "sub" / "mod.py").read_text() == "x = 1\ny = 2\n"
    assert outcome.text.startswith("Wrote pkg/sub/mod.py: 2 lines, 12 bytes; created.")
    assert outcome.path == "pkg/sub/mod.py"
    assert outcome.file_sha256 == hashlib.sha256(b"x = 1\ny = 2\n").hexdigest()
    assert outcome.modified_files


def test_write_file_keeps_the_mode_of_the_file_it_replaces(run, worktree):
    script = worktree / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    outcome = run("write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert "replaced (1 lines before)" in outcome.text
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_write_file_refuses_protected_and_outside_paths_and_writes_nothing(run, worktree, tmp_path):
    for path in (".git/config", ".atrium/tasks/1/intent.md", "../escape.txt", str(tmp_path / "x")):
        outcome = run("write_file", path=path, content="pwned\n")
        assert outcome.is_error, path
        assert not outcome.modified_files
    assert (worktree / ".atrium" / "tasks" / "1" / "intent.md").read_text() == "# Intent\n"
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "x").exists()


def test_write_file_through_a_symlinked_directory_out_is_refused(run, worktree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, worktree / "linked")
    outcome = run("write_file", path="linked/new.txt", content="x")
    assert outcome.is_error and "outside the worktree" in outcome.text
    assert list(outside.iterdir()) == []


def test_edit_file_replaces_one_exact_occurrence_and_shows_the_result(run, worktree):
    outcome = run("edit_file", path="src/app.py", old="return a - b", new="return a + b")
    assert not outcome.is_error
    assert (worktree / "src" / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "replaced 1 occurrence" in outcome.text
    assert "2\t    return a + b" in outcome.text
    assert (outcome.line_start, outcome.line_end) == (2, 2)
    assert outcome.file_sha256 == hashlib.sha256((worktree / "src" / "app.py").read_bytes()).hexdigest()


def test_edit_file_not_found_explains_a_whitespace_near_miss(run, worktree):
    before = (worktree / "src" / "app.py").read_bytes()
    miss = run("edit_file", path="src/app.py", old="def add(a, b):\n  return a - b", new="x")
    assert miss.is_error
    assert "lines 1-2 match if indentation and trailing spaces are ignored" in miss.text
    assert (worktree / "src" / "app.py").read_bytes() == before


def test_edit_file_not_found_at_all_says_so(run):
    outcome = run("edit_file", path="src/app.py", old="def subtract", new="x")
    assert outcome.is_error
    assert "old text not found (2 lines)" in outcome.text


def test_edit_file_with_several_occurrences_lists_them_and_changes_nothing(run, worktree):
    (worktree / "dup.py").write_text("x = 1\ny = 2\nx = 1\n")
    outcome = run("edit_file", path="dup.py", old="x = 1", new="x = 3")
    assert outcome.is_error
    assert "occurs 2 times (starting at lines 1, 3)" in outcome.text
    assert "replace_all" in outcome.text
    assert (worktree / "dup.py").read_text() == "x = 1\ny = 2\nx = 1\n"
    everywhere = run("edit_file", path="dup.py", old="x = 1", new="x = 3", replace_all=True)
    assert "replaced 2 occurrences" in everywhere.text
    assert (worktree / "dup.py").read_text() == "x = 3\ny = 2\nx = 3\n"


def test_edit_file_refuses_identical_text_binary_files_and_missing_files(run, worktree):
    assert "identical" in run("edit_file", path="src/app.py", old="add", new="add").text
    (worktree / "b.bin").write_bytes(b"\0\1\2")
    assert "binary file" in run("edit_file", path="b.bin", old="a", new="b").text
    assert "use write_file to create it" in run("edit_file", path="new.py", old="a", new="b").text


def test_edit_file_matches_lf_text_in_a_crlf_file_and_keeps_crlf(run, worktree):
    (worktree / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = run("edit_file", path="dos.txt", old="one\ntwo", new="uno\ndos")
    assert not outcome.is_error
    assert (worktree / "dos.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_undo_edit_restores_the_content_before_that_call(box, worktree):
    edit = box.execute(call("edit_file", path="src/app.py", old="a - b", new="a + b"))
    assert f"undo_edit(call_id={edit.call_id!r})" in edit.text
    undo = box.execute(call("undo_edit", call_id=edit.call_id))
    assert not undo.is_error
    assert (worktree / "src" / "app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert undo.modified_files and undo.path == "src/app.py"
    # The undo is undoable in turn.
    box.execute(call("undo_edit", call_id=undo.call_id))
    assert (worktree / "src" / "app.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_undo_of_a_created_file_deletes_it_and_undoing_that_recreates_it(box, worktree):
    created = box.execute(call("write_file", path="new.txt", content="hello\n"))
    undo = box.execute(call("undo_edit", call_id=created.call_id))
    assert "deleted new.txt" in undo.text
    assert not (worktree / "new.txt").exists()
    box.execute(call("undo_edit", call_id=undo.call_id))
    assert (worktree / "new.txt").read_text() == "hello\n"


def test_undo_refuses_when_the_file_changed_since_and_leaves_it_alone(box, worktree):
    first = box.execute(call("edit_file", path="src/app.py", old="a - b", new="a + b"))
    box.execute(call("edit_file", path="src/app.py", old="def add", new="def plus"))
    undo = box.execute(call("undo_edit", call_id=first.call_id))
    assert undo.is_error
    assert "has changed since call" in undo.text and "newest first" in undo.text
    assert (worktree / "src" / "app.py").read_text() == "def plus(a, b):\n    return a + b\n"


def test_undo_of_an_unknown_call_id_is_a_clear_error(run):
    outcome = run("undo_edit", call_id="never-issued")
    assert outcome.is_error and "no write_file/edit_file call with id 'never-issued'" in outcome.text


def test_an_edit_that_cannot_apply_is_known_before_anyone_is_asked(box, worktree):
    """The approval card is not shown for it (sessions.runtime.loop); the checks are edit_file's own."""
    src = worktree / "src" / "app.py"
    assert box.cannot_apply(call("edit_file", path="src/app.py", old="return a - b", new="return a + b")) is None
    assert "not found" in box.cannot_apply(call("edit_file", path="src/app.py", old="return a * b", new="x"))
    assert "no such file" in box.cannot_apply(call("edit_file", path="src/none.py", old="a", new="b"))
    src.write_text("x = 1\nx = 1\n")
    assert "occurs 2 times" in box.cannot_apply(call("edit_file", path="src/app.py", old="x = 1", new="x = 2"))
    assert box.cannot_apply(call("edit_file", path="src/app.py", old="x = 1", new="x = 2", replace_all=True)) is None
    assert box.cannot_apply(call("write_file", path="src/app.py", content="")) is None  # a write always applies
    assert src.read_text() == "x = 1\nx = 1\n"  # looking changed nothing
    assert "no such file" in box.cannot_apply(call("edit_file", path="new/deep/a.py", old="a", new="b"))
    assert not (worktree / "new").exists()  # the look made no folder
    with socket.socket(socket.AF_UNIX) as listener:  # what the agent may put where a file was
        listener.bind(str(worktree / "src" / "sock"))
        assert "edit_file failed" in box.cannot_apply(call("edit_file", path="src/sock", old="a", new="b"))
