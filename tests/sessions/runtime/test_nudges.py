from __future__ import annotations

import pytest

from sessions.runtime.nudges import (
    EMPTY,
    NUDGE_TEXT,
    PROMISE,
    UNCHECKED,
    empty_again,
    nudge_for,
    promises_more,
)


@pytest.mark.parametrize("reply", [
    "Fixed the parser. Next, I'll add tests for the edge cases.",
    "The config is updated. I will now run the full suite.",
    "Let me check the remaining failures.",
    "Done with step one; I'm going to refactor the loader",
])
def test_a_reply_that_announces_more_work_is_a_promise(reply):
    assert promises_more(reply)


@pytest.mark.parametrize("reply", [
    "Fixed median() for even counts; all five tests pass.",
    "I will not change the tests, as asked. Everything passes.",
    "",
])
def test_a_final_summary_is_not_a_promise(reply):
    assert not promises_more(reply)


def test_each_nudge_comes_once_and_unchecked_writes_come_first():
    assert nudge_for(reply="Next I'll test it.", wrote_files=True, nudged=[]) == UNCHECKED
    assert nudge_for(reply="Next I'll test it.", wrote_files=True, nudged=[UNCHECKED]) == PROMISE
    assert nudge_for(reply="Next I'll test it.", wrote_files=True, nudged=[UNCHECKED, PROMISE]) is None
    assert nudge_for(reply="All done.", wrote_files=False, nudged=[]) is None


def test_an_empty_answer_is_nudged_first_each_time_and_fails_right_after_its_nudge():
    assert nudge_for(reply=" \n", wrote_files=True, nudged=[]) == EMPTY
    assert nudge_for(reply="", wrote_files=True, nudged=[EMPTY]) == EMPTY
    told = NUDGE_TEXT[EMPTY]
    assert empty_again("", told=told) and not empty_again("Done.", told=told)
    assert not empty_again("", told="fix the parser")  # an empty answer to anything else: nudged again
