"""Texts leaving the ToolBox are storable: no NUL, no lone surrogate (PostgreSQL, UTF-8)."""

from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools import NUL_MARKER, ToolOutcome, clean_data, clean_text
from observations.gateway.messages import ToolCall

from .conftest import YIELD_SOON, call


def storable(text: str) -> bool:
    """What PostgreSQL text/jsonb accept: encodable as UTF-8, without NUL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def outcome_storable(outcome: ToolOutcome) -> bool:
    return storable(json.dumps(outcome.to_dict(), ensure_ascii=False))


def test_nul_becomes_a_visible_marker():
    assert clean_text("a\x00b\x00") == f"a{NUL_MARKER}b{NUL_MARKER}"


def test_lone_surrogates_become_replacement_characters_and_pairs_their_character():
    assert clean_text("name\udcff.txt") == "name\ufffd.txt"
    assert clean_text("\ude00 then \ud83d") == "\ufffd then \ufffd"
    assert clean_text("smile \ud83d\ude00") == "smile \U0001f600"


def test_clean_text_leaves_ordinary_text_alone():
    text = "tabs\tand é, 中文, \U0001f600 and \\0 stay"
    assert clean_text(text) is text


# Surrogate halves and NUL drawn often, not just as rare as in all of Unicode.
_awkward = st.sampled_from(["\x00", "\ud83d", "\ude00", "\udcff", "\U0001f600", "é"])


@given(st.text(alphabet=_awkward | st.characters(exclude_categories=())))
def test_any_text_comes_out_storable(text):
    cleaned = clean_text(text)
    assert storable(cleaned)
    if storable(text):
        assert cleaned == text


def test_clean_data_reaches_keys_and_nested_values():
    data = {"k\x00": ["v\udcff", {"n": 1, "s": "ok"}], "t": ("x\x00",), "none": None}

    assert clean_data(data) == {
        f"k{NUL_MARKER}": ["v\ufffd", {"n": 1, "s": "ok"}],
        "t": (f"x{NUL_MARKER}",),
        "none": None,
    }


def test_shell_output_with_nul_bytes_is_storable(make_box):
    # A wait bound no loaded machine misses (the suite's default is 0.5 s, for tests of yielding).
    outcome = make_box().execute(call("shell", command=r"printf 'a.py\0b.py\0'"))

    assert outcome.text.endswith(f"a.py{NUL_MARKER}b.py{NUL_MARKER}")
    assert outcome_storable(outcome)


def test_a_text_file_with_a_nul_past_the_binary_sniff_is_read_storably(run, worktree):
    (worktree / "late.txt").write_bytes(b"x\n" * 5000 + b"before\0after\n")

    outcome = run("read_file", path="late.txt", start=5001)

    assert outcome.text.endswith(f"5001\tbefore{NUL_MARKER}after")
    assert outcome_storable(outcome)


def test_a_file_name_that_is_not_utf8_is_listed_storably(run, worktree):
    (worktree / "odd").mkdir()
    (worktree / "odd" / os.fsdecode(b"caf\xe9.txt")).write_text("x\n")

    outcome = run("list_files", path="odd")

    assert "odd/caf\ufffd.txt" in outcome.text
    assert outcome_storable(outcome)


def test_a_search_hit_in_a_file_whose_name_is_not_utf8_is_storable(run, worktree):
    (worktree / os.fsdecode(b"n\xffme.py")).write_text("needle\n")

    outcome = run("search", pattern="needle")

    assert "n\ufffdme.py:1: needle" in outcome.text
    assert outcome_storable(outcome)


def test_a_job_report_settled_at_a_step_boundary_is_storable(make_box):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command=r"sleep 0.8; printf 'late\0done'"))
    handle = shell.job_handle
    assert handle is not None
    deadline = time.monotonic() + 10
    while not box.jobs.status(handle).done:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    (report,) = box.settle_jobs("step-1")

    assert report.text.endswith(f"late{NUL_MARKER}done")
    assert storable(report.text)


def test_a_job_result_collected_by_await_is_storable(make_box):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command=r"sleep 0.8; printf 'late\0done'"))

    for _ in range(40):
        outcome = box.execute(call("await", handles=[shell.job_handle]))
        if not outcome.pending_jobs:
            break

    assert outcome.text.endswith(f"late{NUL_MARKER}done")
    assert outcome_storable(outcome)


def test_a_skip_reason_and_unknown_tool_name_are_storable(box):
    skipped = box.skip(call("shell", command="true"), "it came after \x00 a yield")
    unknown = box.execute(ToolCall("c-odd", "rm\x00rf", {"path\udcff": "x\x00"}))

    assert NUL_MARKER in skipped.text
    assert outcome_storable(skipped)
    assert unknown.tool == f"rm{NUL_MARKER}rf"
    assert unknown.arguments == {"path\ufffd": f"x{NUL_MARKER}"}
    assert outcome_storable(unknown)


def test_a_chat_post_reaches_the_room_storable(make_box):
    posted: list[str] = []
    box = make_box(post_message=posted.append)

    box.execute(call("post_message", text="done\x00"))

    assert posted == [f"done{NUL_MARKER}"]


def test_an_outcome_recorded_before_cleaning_is_served_clean(box):
    raw = ToolOutcome(call_id="c-old", tool="shell", arguments={"command": "cat x.pyc"},
                      text="exit 0\n\x00\x01")
    box.records.directory.mkdir(parents=True, exist_ok=True)
    (box.records._path("c-old", ".json")).write_text(json.dumps(raw.to_dict()))

    replayed = box.execute(ToolCall("c-old", "shell", {"command": "cat x.pyc"}))

    assert replayed.replayed
    assert replayed.text == f"exit 0\n{NUL_MARKER}\x01"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "src/\udcff"}),
        ("search", {"pattern": "x", "path": "src/\udcff"}),
        ("write_file", {"path": "new.txt", "content": "caf\udce9"}),
        ("undo_edit", {"call_id": "\udcff"}),
        ("await", {"handles": ["job-\ud800"]}),
        ("post_message", {"text": "hi \udcff"}),
    ],
)
def test_an_argument_with_a_lone_surrogate_is_refused_and_settles_storably(
    box, worktree, tool, arguments
):
    outcome = box.execute(ToolCall(f"c-{tool}", tool, arguments))

    assert outcome.is_error
    assert "lone surrogate" in outcome.text and "send the character itself" in outcome.text
    assert outcome_storable(outcome)
    assert not (worktree / "new.txt").exists()


def test_a_shell_command_with_a_nul_is_refused_instead_of_dying_unexplained(box):
    outcome = box.execute(call("shell", command="echo a\x00b"))

    assert outcome.is_error
    assert outcome.text == "Invalid arguments: shell: argument 'command' must not contain a NUL character."
    assert box.job_statuses() == ()
