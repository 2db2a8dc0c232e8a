"""search under pathological patterns: bounded in time, and never freezing other threads."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from agents.tools import search as search_module
from agents.tools.search import SearchLimits, search

TOO_SLOW = "the pattern is too slow (catastrophic backtracking?); simplify it"


def test_the_classic_catastrophic_pattern_on_a_short_line_answers_at_once(worktree):
    # Python's re needs hours for this (2^30 ways to split the word).
    (worktree / "words.txt").write_text("a" * 30 + "!\n")

    started = time.monotonic()
    result = search(worktree, pattern=r"(\w+\s?)+$", path="words.txt", glob=None)

    assert time.monotonic() - started < 2.0
    assert result.text == r"No matches for /(\w+\s?)+$/ in words.txt."


def test_a_pattern_that_backtracks_forever_is_stopped_at_the_bound_and_named(worktree):
    (worktree / "early.txt").write_text("aaaa\n")
    (worktree / "slow.txt").write_text("fine\n" + "a" * 60 + "!\nnever reached aa\n")
    limits = SearchLimits(max_seconds=0.5)

    started = time.monotonic()
    result = search(worktree, pattern=r"(a|aa)+$", path=".", glob="*.txt", limits=limits)

    assert time.monotonic() - started < 1.5
    assert result.is_error
    assert TOO_SLOW in result.text
    assert "slow.txt:2" in result.text  # where it got stuck
    assert "early.txt:1: aaaa" in result.text  # what it found before
    assert "never reached" not in result.text


def test_other_threads_keep_running_while_a_pattern_backtracks(worktree):
    """The lease heartbeat and steer polling live on other threads of the worker."""
    (worktree / "slow.txt").write_text("a" * 60 + "!\n")
    ticks: list[float] = []
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    beating = threading.Thread(target=heartbeat)
    beating.start()
    try:
        started = time.monotonic()
        result = search(worktree, pattern=r"(a|aa)+$", path="slow.txt", glob=None,
                        limits=SearchLimits(max_seconds=0.6))
        ended = time.monotonic()
    finally:
        stop.set()
        beating.join()

    assert TOO_SLOW in result.text
    during = [t for t in ticks if started < t < ended]
    assert len(during) >= 20  # ~60 expected; a GIL held for the whole match gives 0 or 1
    assert max(b - a for a, b in zip([started, *during], [*during, ended], strict=True)) < 0.2


def test_python_regex_syntax_keeps_its_meaning(worktree):
    (worktree / "mixed.txt").write_text("x = 42\ny = foo_bar\nname = 'é'\n")

    named = search(worktree, pattern=r"(?P<v>\w) = (?P=v)?\d+", path="mixed.txt", glob=None)
    inline = search(worktree, pattern=r"(?i)FOO_\w+$", path="mixed.txt", glob=None)
    unicode_word = search(worktree, pattern=r"'\w'", path="mixed.txt", glob=None)

    assert named.text.splitlines()[1:] == ["mixed.txt:1: x = 42"]
    assert inline.text.splitlines()[1:] == ["mixed.txt:2: y = foo_bar"]
    assert unicode_word.text.splitlines()[1:] == ["mixed.txt:3: name = 'é'"]


def test_a_search_over_many_files_that_runs_out_of_time_says_so_without_blaming_the_pattern(
    worktree,
):
    for n in range(50):
        (worktree / f"f{n:02}.txt").write_text("plain line\n" * 200)

    result = search(worktree, pattern="plain", path=".", glob="*.txt",
                    limits=SearchLimits(max_seconds=0.0))

    assert not result.is_error
    assert TOO_SLOW not in result.text
    assert result.text.endswith("[stopped after 0 s; narrow path or glob]")


def test_a_line_that_meets_the_end_of_the_budget_does_not_blame_the_pattern(
    worktree, monkeypatch
):
    # The clock says the budget is nearly spent when the one long line comes up.
    (worktree / "slow.txt").write_text("a" * 60 + "!\n")
    readings = iter([100.0])
    clock = SimpleNamespace(monotonic=lambda: next(readings, 100.49))
    monkeypatch.setattr(search_module, "time", clock)

    result = search(worktree, pattern=r"(a|aa)+$", path="slow.txt", glob=None,
                    limits=SearchLimits(max_seconds=0.5))

    assert TOO_SLOW not in result.text
    assert result.text.endswith("[stopped after 0.5 s; narrow path or glob]")
