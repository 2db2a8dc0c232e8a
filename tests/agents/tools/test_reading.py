"""read_file, list_files and search through the ToolBox."""

from __future__ import annotations

import hashlib
import os

import pytest


def test_read_file_numbers_lines_and_says_which_lines_of_how_many(run, worktree):
    outcome = run("read_file", path="src/app.py")
    assert not outcome.is_error
    assert outcome.text == "src/app.py: lines 1-2 of 2\n1\tdef add(a, b):\n2\t    return a - b"
    assert (outcome.path, outcome.line_start, outcome.line_end) == ("src/app.py", 1, 2)
    content = (worktree / "src" / "app.py").read_bytes()
    assert outcome.file_sha256 == hashlib.sha256(content).hexdigest()
    assert outcome.range_sha256 == outcome.file_sha256
    assert outcome.purpose == "read src/app.py lines 1-2"
    assert outcome.arguments == {"end": None, "path": "src/app.py", "start": 1}
    assert not outcome.modified_files


def test_read_file_returns_an_inclusive_line_range_and_hashes_exactly_those_bytes(run, worktree):
    lines = [f"line {n}\n" for n in range(1, 21)]
    (worktree / "long.txt").write_text("".join(lines))
    outcome = run("read_file", path="./long.txt", start=5, end=7)
    assert outcome.text.splitlines() == [
        "long.txt: lines 5-7 of 20", "5\tline 5", "6\tline 6", "7\tline 7",
    ]
    assert outcome.range_sha256 == hashlib.sha256("".join(lines[4:7]).encode()).hexdigest()
    assert outcome.file_sha256 == hashlib.sha256("".join(lines).encode()).hexdigest()
    assert outcome.arguments["path"] == "long.txt"


def test_a_huge_file_is_capped_with_a_note_on_how_to_read_on(run, worktree):
    (worktree / "huge.txt").write_text("".join(f"row {n}\n" for n in range(1, 50_001)))
    outcome = run("read_file", path="huge.txt")
    assert (outcome.line_start, outcome.line_end) == (1, 2000)
    assert outcome.text.startswith("huge.txt: lines 1-2000 of 50000\n")
    assert "[48000 more lines not shown" in outcome.text
    assert "continue with start=2001" in outcome.text
    follow = run("read_file", path="huge.txt", start=49_999)
    assert follow.text.splitlines()[1:] == ["49999\trow 49999", "50000\trow 50000"]


def test_the_byte_cap_applies_to_wide_lines(run, worktree):
    (worktree / "wide.txt").write_text(("x" * 1000 + "\n") * 500)
    outcome = run("read_file", path="wide.txt")
    assert outcome.line_end is not None and outcome.line_end < 500
    assert len(outcome.text) < 110 * 1024
    assert f"continue with start={outcome.line_end + 1}" in outcome.text


def test_a_single_gigantic_line_is_cut_not_returned_whole(run, worktree):
    (worktree / "min.js").write_text("a" * 3_000_000)
    outcome = run("read_file", path="min.js")
    assert not outcome.is_error
    assert len(outcome.text) < 3000
    assert "line cut: 2.9 MB in total" in outcome.text


def test_a_binary_file_gets_a_clear_result_not_its_bytes(run, worktree):
    (worktree / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    outcome = run("read_file", path="logo.png")
    assert not outcome.is_error
    assert outcome.text == "logo.png: binary file, 272 bytes, not shown."


def test_text_that_is_not_utf8_is_refused_rather_than_garbled(run, worktree):
    (worktree / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    outcome = run("read_file", path="latin.txt")
    assert outcome.is_error
    assert "line 1 is not UTF-8" in outcome.text


def test_reading_past_the_end_or_a_backwards_range_is_an_error_that_says_why(run):
    assert "past the end: src/app.py has 2 lines" in run("read_file", path="src/app.py", start=9).text
    backwards = run("read_file", path="src/app.py", start=2, end=1)
    assert backwards.is_error and "end (1) is before start (2)" in backwards.text


def test_an_end_past_the_file_is_clamped_with_a_note(run):
    outcome = run("read_file", path="src/app.py", end=10)
    assert outcome.line_end == 2
    assert "end=10 is past the end of the file; it has 2 lines" in outcome.text


def test_empty_missing_and_directory_paths(run, worktree):
    (worktree / "empty.txt").write_text("")
    assert run("read_file", path="empty.txt").text == "empty.txt: empty file (0 lines)."
    missing = run("read_file", path="nope.py")
    assert missing.is_error and "no such file" in missing.text
    directory = run("read_file", path="src")
    assert directory.is_error and "is a directory; use list_files" in directory.text


def test_a_last_line_without_newline_and_crlf_files_read_cleanly(run, worktree):
    (worktree / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree")
    outcome = run("read_file", path="dos.txt")
    assert outcome.text.splitlines() == [
        "dos.txt: lines 1-3 of 3 (CRLF line endings)", "1\tone", "2\ttwo", "3\tthree",
    ]


def test_list_files_skips_git_and_lists_a_directory_before_its_subdirectories(run):
    outcome = run("list_files")
    assert outcome.text.splitlines() == [
        "3 files under .:", "README.md", ".atrium/tasks/1/intent.md", "src/app.py",
    ]


def test_list_files_filters_by_pattern_on_names_or_paths(run, worktree):
    (worktree / "src" / "util.py").write_text("")
    (worktree / "tests").mkdir()
    (worktree / "tests" / "test_app.py").write_text("")
    assert run("list_files", pattern="*.py").text.splitlines()[1:] == [
        "src/app.py", "src/util.py", "tests/test_app.py"]
    assert run("list_files", pattern="tests/*").text.splitlines()[1:] == ["tests/test_app.py"]
    assert run("list_files", path="src").text.splitlines()[0] == "2 files under src:"
    assert run("list_files", pattern="*.rs").text == "No files matching '*.rs' under .."


def test_list_files_is_bounded(run, worktree):
    many = worktree / "many"
    many.mkdir()
    for n in range(700):
        (many / f"f{n:04}.txt").write_text("")
    outcome = run("list_files", path="many")
    lines = outcome.text.splitlines()
    assert lines[0] == "700 files under many (first 500 shown; narrow with path or pattern):"
    assert len(lines) == 501


def test_list_files_does_not_follow_a_symlinked_directory(run, worktree, tmp_path):
    os.symlink(tmp_path, worktree / "escape")
    outcome = run("list_files")
    assert "escape (symlink, not followed)" in outcome.text
    assert "jobs" not in outcome.text


def test_search_prints_grep_style_matches(run, worktree):
    (worktree / "src" / "more.py").write_text("x = add(1, 2)\nprint(x)\n")
    outcome = run("search", pattern=r"add\(")
    assert outcome.text.splitlines() == [
        "2 matches in 2 files for /add\\(/ in .:",
        "src/app.py:1: def add(a, b):",
        "src/more.py:1: x = add(1, 2)",
    ]
    assert outcome.path == "."


def test_search_filters_by_glob_and_path(run, worktree):
    (worktree / "notes.txt").write_text("return here\n")
    assert run("search", pattern="return", glob="*.py").text.count("\n") == 1
    assert run(
        "search", pattern="return", path="src", glob="*.txt").text == "No matches for /return/ in src (*.txt)."


def test_search_with_a_bad_regex_says_so(run):
    outcome = run("search", pattern="add(")
    assert outcome.is_error
    assert "invalid regex 'add('" in outcome.text and "escape special characters" in outcome.text


def test_search_skips_binary_files_and_is_bounded(run, worktree):
    (worktree / "blob.bin").write_bytes(b"needle\0needle")
    (worktree / "hay.txt").write_text("needle\n" * 1000)
    outcome = run("search", pattern="needle")
    assert outcome.text.startswith("1000 matches in 1 files for /needle/ in . (first 200 shown")
    assert "blob.bin" not in outcome.text
    assert len(outcome.text.splitlines()) == 201


def test_search_refuses_to_leave_the_worktree(run):
    outcome = run("search", pattern="root", path="/etc")
    assert outcome.is_error and "outside the worktree" in outcome.text


@pytest.mark.parametrize("path", ["../", "/etc/passwd"])
def test_reads_outside_the_worktree_are_error_results(run, path):
    outcome = run("read_file", path=path)
    assert outcome.is_error and "outside the worktree" in outcome.text
