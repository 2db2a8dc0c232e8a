"""What an agent is told when its merge conflict is handed back (plain Python)."""

from __future__ import annotations

from sessions.runtime.conflicts import (
    MAX_REPORT_CHARS,
    conflict_hunks,
    conflict_report,
    markers_left_report,
)

TEXT = "\n".join([
    "line 1", "line 2", "line 3", "line 4",
    "<<<<<<< HEAD", "mine", "=======", "theirs", ">>>>>>> main",
    "line 10", "line 11", "line 12", "line 13", "line 14",
])


def test_each_conflict_comes_with_a_few_lines_around_it_and_where_it_starts():
    [(first, hunk)] = conflict_hunks(TEXT, context=2)
    assert first == 3
    assert hunk.splitlines() == ["line 3", "line 4", "<<<<<<< HEAD", "mine", "=======", "theirs",
                                 ">>>>>>> main", "line 10", "line 11"]
    assert conflict_hunks("no conflict here\n") == []


def test_the_report_names_the_files_the_hunks_and_what_merged_meanwhile():
    report = conflict_report(conflicts=["app.py", "logo.png"], texts={"app.py": TEXT},
                             merged_meanwhile=["abc1234 Fix the parser"], round_number=1, target="main")
    assert "round 1 of 3" in report and "abc1234 Fix the parser" in report
    assert "app.py, from line 2:" in report and ">>>>>>> main" in report
    assert "logo.png: no text conflict shown" in report
    assert report.rstrip().endswith("the hub records the merge when you finish.")


def test_a_clean_merge_of_main_only_asks_for_the_check_again():
    report = conflict_report(conflicts=[], texts={}, merged_meanwhile=["abc Fix"], round_number=2, target="trunk")
    assert "merged into your branch without conflicts" in report and "trunk" in report


def test_a_huge_conflict_is_cut_and_says_so():
    texts = {f"f{n}.py": TEXT.replace("mine", "x" * 2_000) for n in range(10)}
    commits = [f"{n:07x} commit {n}" for n in range(50)]
    report = conflict_report(conflicts=sorted(texts), texts=texts, merged_meanwhile=commits, round_number=1,
                             target="main")
    assert len(report) <= MAX_REPORT_CHARS + 200
    assert "… and 30 more" in report and "read the files for the rest" in report


def test_markers_left_names_the_files():
    assert "a.py, b.py" in markers_left_report(["a.py", "b.py"])
