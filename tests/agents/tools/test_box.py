"""The ToolBox executor: schemas, argument checking, permissions and idempotency by call id."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.providers.toolcalls import parse_arguments
from agents.tools import TOOL_SCHEMAS, ToolOutcome
from agents.tools.schemas import ArgumentError, check_arguments
from observations.gateway.breakdown import tool_part
from observations.gateway.messages import ToolCall

from .conftest import call

# Sent with every request: a change that grows the schemas has to move this number.
SCHEMA_BUDGET_CHARS = 3016  # recall and history_search (issue 8) +520; await can stop jobs (issue 10) +21;
# room_status and mentions in post_message (issue 17) +245


def _serialized_size(schemas) -> int:
    return sum(
        len(json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters},
                       separators=(",", ":")))
        for s in schemas
    )


# Per tool, bytes as sent (the session page's prefix breakdown shows the same figure):
# each is the size today, so any growth has to move its number here.
TOOL_BUDGET_BYTES = {
    "read_file": 287, "list_files": 217, "search": 250, "write_file": 207, "edit_file": 293,
    "undo_edit": 204, "shell": 293, "await": 299, "post_message": 199, "room_status": 209, "recall": 313,
    "history_search": 245,
}


def test_the_tool_schemas_stay_within_their_size_budget(box):
    assert [s.name for s in box.schemas()] == [
        "read_file", "list_files", "search", "write_file", "edit_file", "undo_edit", "shell",
        "await", "post_message", "room_status", "recall", "history_search",
    ]
    assert _serialized_size(box.schemas()) <= SCHEMA_BUDGET_CHARS
    sizes = {s.name: tool_part(s)["bytes"] for s in box.schemas()}
    grown = {name: (size, TOOL_BUDGET_BYTES[name]) for name, size in sizes.items() if size > TOOL_BUDGET_BYTES[name]}
    assert grown == {}, "tool schemas grew (bytes, budget); every byte is sent with every request"
    assert sum(sizes.values()) == _serialized_size(box.schemas())


def test_every_required_argument_is_a_declared_property():
    for schema in TOOL_SCHEMAS:
        assert set(schema.parameters.get("required", [])) <= set(schema.parameters["properties"])


def test_allowed_tools_limit_both_schemas_and_execution(make_box):
    box = make_box(allowed_tools=["read_file", "search"])
    assert [s.name for s in box.schemas()] == ["read_file", "search"]
    outcome = box.execute(call("shell", command="touch pwned"))
    assert outcome.is_error
    assert outcome.text == "Tool 'shell' is not available to this agent. Available tools: read_file, search."
    assert not (box.worktree / "pwned").exists()


def test_an_unknown_tool_is_an_error_result(run):
    outcome = run("delete_everything", path=".")
    assert outcome.is_error and "'delete_everything' does not exist" in outcome.text
    assert outcome.tool == "delete_everything"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("read_file", {}, "missing required argument(s) 'path'"),
        ("read_file", {"path": 3}, "argument 'path' must be a string, got integer"),
        ("read_file", {"path": "a", "start": "10"}, "argument 'start' must be a number, got string"),
        ("read_file", {"path": "a", "start": True}, "must be a number, got boolean"),
        ("read_file", {"path": "a", "start": 1.5}, "must be a whole number"),
        ("read_file", {"path": "a", "start": 0}, "'start' must be at least 1"),
        ("read_file", {"path": "a", "lines": "1-5"}, "unknown argument(s) 'lines'; accepted: path, start, end"),
        ("edit_file", {"path": "a", "old": "x", "new": "y", "replace_all": "yes"}, "must be true or false"),
        ("await", {"handles": "job-1"}, "'handles' must be a list of strings, got string"),
        ("shell", {"command": "   "}, "'command' must not be empty"),
    ],
)
def test_malformed_arguments_are_error_results_the_model_can_act_on(run, name, arguments, message):
    outcome = run(name, **arguments)
    assert outcome.is_error
    assert outcome.text.startswith("Invalid arguments: ")
    assert message in outcome.text


def test_arguments_that_are_not_an_object_are_an_error_result(box):
    outcome = box.execute(ToolCall(id="c-raw", name="read_file", arguments='{"path": "a"'))  # type: ignore[arg-type]
    assert outcome.is_error and "arguments must be a JSON object, got string" in outcome.text


def test_invalid_json_from_the_model_is_named_as_such_not_as_an_internal_key(box):
    """Issue 28: the model heard "unknown argument(s) '__malformed_arguments__'"."""
    outcome = box.execute(ToolCall(id="c-bad", name="read_file", arguments=parse_arguments('{"path": "a"')))
    assert outcome.is_error and "not valid JSON for an object" in outcome.text and "'{\"path\": \"a\"'" in outcome.text
    assert "__malformed" not in outcome.text and "path" in outcome.text


def test_normalized_arguments_have_sorted_keys_defaults_and_a_resolved_path(run):
    outcome = run("read_file", path="./src/../src/app.py", start=1.0, end=None)
    assert list(outcome.arguments) == ["end", "path", "start"]
    assert outcome.arguments == {"end": None, "path": "src/app.py", "start": 1}
    listed = run("list_files")
    assert listed.arguments == {"path": ".", "pattern": None}


def test_a_call_id_runs_once_and_a_repeat_returns_the_recorded_outcome(box, worktree):
    shell = ToolCall(id="call-once", name="shell", arguments={"command": "echo x >> count.txt"})
    first = box.execute(shell)
    second = box.execute(shell)
    assert (worktree / "count.txt").read_text() == "x\n"
    assert not first.replayed and second.replayed
    assert second.text == first.text and second.call_id == "call-once"


def test_recorded_outcomes_survive_a_new_toolbox_on_the_same_state(make_box, worktree):
    edit = ToolCall(id="call-edit", name="edit_file",
                    arguments={"path": "src/app.py", "old": "a - b", "new": "a + b"})
    first = make_box().execute(edit)
    again = make_box().execute(edit)  # as a worker resuming the step would
    assert again.replayed and again.text == first.text and not again.is_error
    assert (worktree / "src" / "app.py").read_text().count("a + b") == 1


def test_a_side_effecting_call_that_started_without_an_outcome_is_not_rerun(box, worktree):
    edit = ToolCall(id="call-crashed", name="write_file",
                    arguments={"path": "out.txt", "content": "x"})
    box.records.begin(edit.id, edit.name)  # as if the worker died mid-call
    outcome = box.execute(edit)
    assert outcome.outcome_unknown and outcome.is_error
    assert "was not run again" in outcome.text
    assert not (worktree / "out.txt").exists()


def test_a_read_that_started_without_an_outcome_is_simply_run_again(box):
    read = ToolCall(id="call-read", name="read_file", arguments={"path": "README.md"})
    box.records.begin(read.id, read.name)
    outcome = box.execute(read)
    assert not outcome.outcome_unknown and outcome.text.endswith("1\t# demo")


def test_skip_settles_a_call_as_not_run_so_it_never_runs_later(box, worktree):
    later = ToolCall(id="call-later", name="write_file", arguments={"path": "late.txt", "content": "x"})
    skipped = box.skip(later, "an earlier call in this step became a job")
    assert skipped.is_error and skipped.text.startswith("Not run: an earlier call")
    assert box.execute(later).replayed
    assert not (worktree / "late.txt").exists()


def test_a_call_without_an_id_is_a_programming_error(box):
    with pytest.raises(ValueError, match="needs an id"):
        box.execute(ToolCall(id="", name="read_file", arguments={"path": "README.md"}))


def test_post_message_goes_to_the_callback(make_box):
    posted: list[str] = []
    box = make_box(post_message=posted.append)
    outcome = box.execute(call("post_message", text="Tests pass now."))
    assert posted == ["Tests pass now."] and outcome.text == "Posted to the room chat."
    assert box.execute(ToolCall(outcome.call_id, "post_message", {"text": "Tests pass now."})).replayed
    assert posted == ["Tests pass now."]


def test_post_message_without_a_room_chat_is_an_error_result(run):
    outcome = run("post_message", text="hello")
    assert outcome.is_error and "no room chat" in outcome.text


def test_an_outcome_round_trips_through_plain_data(run):
    outcome = run("read_file", path="src/app.py", start=2)
    data = json.loads(json.dumps(outcome.to_dict()))
    assert ToolOutcome.from_dict(data) == outcome


_fuzz_ids = itertools.count()
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from([s.name for s in TOOL_SCHEMAS]),
    arguments=st.dictionaries(
        st.sampled_from(["path", "start", "end", "pattern", "glob", "old", "new", "content",
                         "replace_all", "command", "timeout", "handles", "seconds", "text",
                         "call_id", "extra"]),
        _json, max_size=4,
    ) | _json,
)
def test_any_arguments_are_either_accepted_or_refused_with_an_argument_error(name, arguments):
    try:
        checked = check_arguments(name, arguments)
    except ArgumentError as exc:
        assert str(exc)
    else:
        assert list(checked.values) == sorted(checked.values)
        required = next(s for s in TOOL_SCHEMAS if s.name == name).parameters.get("required", [])
        assert all(checked.values[key] is not None for key in required)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=_json, name=st.sampled_from(["read_file", "list_files", "search"]))
def test_reading_tools_never_raise_whatever_they_are_sent(box, arguments, name):
    outcome = box.execute(ToolCall(id=f"fuzz-{next(_fuzz_ids)}", name=name, arguments=arguments))
    assert isinstance(outcome, ToolOutcome) and not outcome.replayed
    if not isinstance(arguments, dict):
        assert outcome.is_error
