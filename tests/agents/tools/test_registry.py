"""One entry per tool: everything else about tools is derived from the registry."""

from __future__ import annotations

import pytest

from agents.tools import TOOL_SCHEMAS, registry
from agents.tools.box import EXECUTORS, ToolBox
from agents.tools.schemas import DEFAULTS, ArgumentError, check_arguments
from sessions.runtime import approvals


def test_every_registered_tool_has_a_schema_traits_and_an_executor():
    for tool in registry.TOOLS:
        assert tool.description and tool.schema.parameters["type"] == "object"
        assert set(tool.schema.parameters["properties"]) == set(tool.args_by_name)
        assert tool.name in EXECUTORS, f"no executor for {tool.name}"
    assert set(EXECUTORS) == set(registry.NAMES)
    assert len(registry.NAMES) == len(set(registry.NAMES))


def test_the_schemas_sent_to_the_model_are_the_registry(tmp_path):
    assert [s.name for s in TOOL_SCHEMAS] == list(registry.NAMES)
    assert tuple(tool.schema for tool in registry.TOOLS) == TOOL_SCHEMAS
    box = ToolBox(worktree=tmp_path, state_dir=tmp_path / "state")
    assert box.schemas() == tuple(s for s in TOOL_SCHEMAS if s.name in registry.WORK_TOOLS)


def test_only_a_reviewer_has_the_verdict_tool_and_a_reviewer_has_nothing_that_writes_or_runs(tmp_path):
    assert set(registry.VERDICTS) == {"review"} and "review" not in registry.WORK_TOOLS
    reviewer = ToolBox(worktree=tmp_path, state_dir=tmp_path / "state", allowed_tools=registry.REVIEW_TOOLS)
    names = {s.name for s in reviewer.schemas()}
    assert names == {"read_file", "list_files", "search", "recall", "review"}
    assert all(registry.BY_NAME[n].read_only for n in names)
    assert not names & (registry.WRITING | registry.SHELL_TOOLS)


def test_required_arguments_have_no_default_and_optional_ones_do():
    for tool in registry.TOOLS:
        required = set(tool.schema.parameters.get("required", []))
        assert set(DEFAULTS[tool.name]) == set(tool.args_by_name) - required


def test_a_constraint_the_schema_leaves_out_is_still_enforced():
    # The schema says only "integer"; the registry's minimum is what refuses 0.
    assert "minimum" not in registry.BY_NAME["read_file"].schema.parameters["properties"]["start"]
    with pytest.raises(ArgumentError, match=r"^read_file: argument 'start' must be at least 1, got 0$"):
        check_arguments("read_file", {"path": "a.py", "start": 0})


def test_approvals_read_their_defaults_from_the_registry():
    for tool in registry.TOOLS:
        expected = approvals.ALLOW if tool.read_only else approvals.ASK
        assert approvals.decide(tool.name, {}, []) == expected, tool.name


def test_traits_hang_together():
    for tool in registry.TOOLS:
        # A tool that changes files is never run again blindly after a crash, nor allowed
        # without asking.
        if tool.writes:
            assert not tool.side_effect_free and not tool.read_only, tool.name
        if tool.path_argument:
            assert "path" in tool.args_by_name, tool.name
        if tool.shell:
            assert "command" in tool.args_by_name and not tool.read_only, tool.name
        if tool.access == "read":
            assert tool.reads_range and tool.path_argument, tool.name


def test_lists_of_tools_elsewhere_name_only_registered_tools():
    from evals.scenario import TOOLS as SCENARIO_TOOLS
    from sessions.approval_rules import TOOL_NAMES

    assert set(SCENARIO_TOOLS) <= set(registry.NAMES)
    assert TOOL_NAMES == registry.NAMES


def test_a_profile_that_names_only_the_verdict_gets_read_only_tools_not_every_tool():
    from sessions.worker.runner import _work_tools

    assert _work_tools([]) is None  # no list: every work tool
    assert _work_tools(["review"]) == ["read_file", "list_files", "search", "recall"]
    assert _work_tools(["shell", "review"]) == ["shell"]
