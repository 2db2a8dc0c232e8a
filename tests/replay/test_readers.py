"""Each reader on a real trajectory cut down to a fixture (see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from observations.replay.readers import (
    read_atrium,
    read_mini_swe_agent,
    read_openhands,
    read_swe_agent,
    write_atrium,
)
from observations.replay.trajectory import (
    FileAccess,
    Trajectory,
    TrajectoryFormatError,
    text_sha256,
)

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str):
    return json.loads((FIXTURES / name).read_text())


# --- mini-swe-agent -----------------------------------------------------------------


@pytest.fixture(scope="module")
def mini() -> Trajectory:
    return read_mini_swe_agent(fixture("astropy__astropy-13033.traj.json"), path="mini.traj.json")


def test_mini_swe_agent_has_one_step_per_assistant_message(mini):
    data = fixture("astropy__astropy-13033.traj.json")
    assistant = [m for m in data["messages"] if m["role"] == "assistant"]
    assert (mini.source, mini.trajectory_id, mini.model) == (
        "mini-swe-agent",
        "astropy__astropy-13033",
        "google/gemini-3-pro-preview",
    )
    assert mini.system_prompt == data["messages"][0]["content"]
    assert mini.task.startswith("<pr_description>")
    assert [s.assistant_text for s in mini.steps] == [m["content"] for m in assistant]
    assert mini.meta["repo_root"] == "/testbed"


def test_mini_swe_agent_command_and_output_pair_up(mini):
    step = mini.steps[1]
    [event] = step.events
    assert event.tool == "bash" and event.arguments == {
        "command": "cat astropy/timeseries/__init__.py"
    }
    assert event.output.startswith("<returncode>0</returncode>\n<output>\n# Licensed")
    assert event.exit_code == 0 and event.call_in_text
    assert event.accesses == (
        FileAccess(
            "read", "astropy/timeseries/__init__.py", content_hash=text_sha256(event.output)
        ),
    )
    assert mini.steps[2].events[0].exit_code == 1  # grep found nothing


def test_mini_swe_agent_reports_per_call_tokens(mini):
    usage = fixture("astropy__astropy-13033.traj.json")["messages"][4]["extra"]["response"]["usage"]
    step = mini.steps[1]
    assert step.reported_input_tokens == usage["prompt_tokens"] == 2696
    assert step.reported_output_tokens == usage["completion_tokens"]
    assert step.cached_input_tokens == usage["prompt_tokens_details"]["cached_tokens"]


def test_mini_swe_agent_format_error_is_a_notice_kept_in_history(mini):
    step = mini.steps[9]
    assert step.events == ()
    assert step.notice.startswith(
        "Please always provide EXACTLY ONE action in triple backticks, found 2 actions"
    )
    assert step.kept_in_history


def test_mini_swe_agent_rereading_a_modified_file_gives_a_different_hash(mini):
    first, second = mini.steps[4].events[0], mini.steps[8].events[0]
    assert first.arguments == second.arguments == {"command": "cat astropy/timeseries/core.py"}
    assert first.accesses[0].path == second.accesses[0].path == "astropy/timeseries/core.py"
    assert first.accesses[0].content_hash != second.accesses[0].content_hash


def test_mini_swe_agent_elided_output_records_no_read(mini):
    event = mini.steps[5].events[0]
    assert "<elided_chars>" in event.output and event.accesses == ()


def test_mini_swe_agent_last_answer_without_output_still_becomes_an_event():
    data = fixture("astropy__astropy-13033.traj.json")
    data["messages"].pop()  # the run stopped before the submission's output was recorded
    trajectory = read_mini_swe_agent(data, path="cut.traj.json")
    [event] = trajectory.steps[-1].events
    assert event.output == "" and event.exit_code is None


def test_mini_swe_agent_refuses_another_format():
    data = fixture("astropy__astropy-13033.traj.json")
    data["trajectory_format"] = "mini-swe-agent-2"
    with pytest.raises(TrajectoryFormatError, match="trajectory_format"):
        read_mini_swe_agent(data, path="x")


# --- SWE-agent 1.1 (Claude, native tool calls) -------------------------------------


@pytest.fixture(scope="module")
def claude() -> Trajectory:
    return read_swe_agent(fixture("django__django-13109.traj"), path="d/django__django-13109.traj")


def test_swe_agent_links_tool_results_by_call_id(claude):
    data = fixture("django__django-13109.traj")
    [event] = claude.steps[1].events
    assert event.call_id == data["history"][4]["tool_calls"][0]["id"]
    assert data["history"][5]["tool_call_ids"] == [event.call_id]
    assert event.output == data["history"][5]["content"][0]["text"]
    assert event.arguments == {
        "command": "view",
        "path": "/testbed/django/db/models/fields/related.py",
        "view_range": [910, 930],
    }
    assert not event.call_in_text
    assert [a.describe() for a in event.accesses] == [
        "read django/db/models/fields/related.py lines 910-930"
    ]
    assert (
        claude.model == "claude-sonnet-4-20250514"
        and claude.trajectory_id == "django__django-13109"
    )


def test_swe_agent_directory_view_is_a_listing(claude):
    assert claude.steps[0].events[0].accesses == (FileAccess("list", "."),)


def test_swe_agent_requeried_format_error_is_a_dropped_step(claude):
    data = fixture("django__django-13109.traj")
    dropped = claude.steps[6]
    assert not dropped.kept_in_history and dropped.events == ()
    assert dropped.assistant_text == data["trajectory"][6]["response"]
    assert dropped.notice.startswith("Your last output did not use any tool calls!")
    assert [s.kept_in_history for s in claude.steps].count(False) == 1
    assert [e.tool for e in claude.steps[7].events] == ["submit"]


def test_swe_agent_history_cut_short_is_reported():
    data = fixture("django__django-13109.traj")
    data["trajectory"] = data["trajectory"][:3]
    with pytest.raises(TrajectoryFormatError, match="assistant turns have no trajectory entry"):
        read_swe_agent(data, path="x.traj")


# --- SWE-agent 1.0 (LM-32B, XML function calls in text) -----------------------------


@pytest.fixture(scope="module")
def lm32b() -> Trajectory:
    return read_swe_agent(fixture("astropy__astropy-7606.traj"), path="astropy__astropy-7606.traj")


def test_swe_agent_xml_calls_are_parsed_from_the_text(lm32b):
    [event] = lm32b.steps[2].events
    assert event.tool == "str_replace_editor" and event.call_in_text
    assert event.arguments == {
        "command": "view",
        "path": "/testbed/astropy/units/core.py",
        "view_range": "[724, 741]",
    }
    assert [a.describe() for a in event.accesses] == ["read astropy/units/core.py lines 724-741"]
    [bash] = lm32b.steps[1].events
    assert bash.arguments == {"command": 'cd /testbed && grep -n "__eq__" astropy/units/core.py'}
    assert bash.accesses == (FileAccess("search", "astropy/units/core.py"),)


def test_swe_agent_abbreviated_file_view_records_no_read(lm32b):
    [event] = lm32b.steps[0].events
    assert "too large to display entirely" in event.output and event.accesses == ()


def test_swe_agent_masked_observation_is_recovered_in_full():
    data = fixture("astropy__astropy-7606.traj")
    full = data["history"][5]["content"]
    data["history"][5]["content"] = "Old environment output: (2 lines omitted)"
    trajectory = read_swe_agent(data, path="masked.traj")
    [event] = trajectory.steps[1].events
    assert event.output == "OBSERVATION:\n" + data["trajectory"][1]["observation"] == full


def test_swe_agent_action_string_is_the_fallback_when_no_call_is_written():
    data = fixture("astropy__astropy-7606.traj")
    text = "Let's look at the first one."  # the call is not written in the answer
    data["history"][6]["content"] = data["trajectory"][2]["response"] = text
    trajectory = read_swe_agent(data, path="x.traj")
    [event] = trajectory.steps[2].events
    assert event.arguments == {
        "command": "view",
        "path": "/testbed/astropy/units/core.py",
        "view_range": [724, 741],
    }
    assert not event.call_in_text


# --- OpenHands ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def openhands() -> Trajectory:
    line = (FIXTURES / "openhands_ponyc-4593.jsonl").read_text().splitlines()[0]
    return read_openhands(json.loads(line), path="output.jsonl:1")


def test_openhands_actions_link_to_observations_by_cause(openhands):
    [event] = openhands.steps[1].events
    assert event.call_id == "toolu_02" and event.tool == "execute_bash"
    assert event.arguments == {"command": "ls src/lib"}
    assert event.exit_code == 2
    assert event.output.startswith("ls: cannot access 'src/lib': No such file or directory")
    assert event.output.endswith("[Command finished with exit code 2]")
    assert openhands.meta["repo_root"] == "/workspace/ponylang__ponyc__0.1"
    assert openhands.model == "openai/openrouter-llama-4-maverick"
    assert "execute_bash" in [tool["function"]["name"] for tool in openhands.meta["tools"]]


def test_openhands_tokens_match_by_response_id(openhands):
    data = json.loads((FIXTURES / "openhands_ponyc-4593.jsonl").read_text())
    usages = {u["response_id"]: u for u in data["metrics"]["token_usages"]}
    first_action = next(e for e in data["history"] if e.get("action") == "run")
    usage = usages[first_action["tool_call_metadata"]["model_response"]["id"]]
    assert openhands.steps[0].reported_input_tokens == usage["prompt_tokens"] == 5549
    assert openhands.steps[0].reported_output_tokens == usage["completion_tokens"]
    assert openhands.steps[0].cached_input_tokens == usage["cache_read_tokens"]


def test_openhands_read_action_gives_path_and_range(openhands):
    [whole] = openhands.steps[11].events
    assert whole.accesses[0].describe() == "read packages/cli/cli.pony"
    [ranged] = openhands.steps[15].events
    assert ranged.arguments["view_range"] == [100, -1]
    assert ranged.accesses[0].describe() == "read packages/cli/cli.pony lines 100-end"
    [failed] = openhands.steps[14].events
    assert failed.output.startswith("ERROR:\nInvalid `view_range`") and failed.accesses == ()


def test_openhands_rejected_tool_call_is_a_notice_step(openhands):
    step = openhands.steps[12]
    assert step.events == () and step.assistant_text == ""
    assert step.notice.startswith("Parameter 'command' is expected to be one of")
    assert step.reported_input_tokens is None


def test_openhands_empty_command_output_stays_empty(openhands):
    [event] = openhands.steps[3].events
    assert event.output.startswith("\n[The command completed with exit code 0.]")


def test_openhands_parallel_calls_of_one_response_share_a_step():
    data = json.loads((FIXTURES / "openhands_ponyc-4593.jsonl").read_text())
    runs = [e for e in data["history"] if e.get("action") == "run"]
    # Make the second call part of the first call's model response.
    runs[1]["tool_call_metadata"]["model_response"] = runs[0]["tool_call_metadata"][
        "model_response"
    ]
    trajectory = read_openhands(data, path="x:1")
    assert [e.call_id for e in trajectory.steps[0].events] == ["toolu_01", "toolu_02"]


# --- Atrium -------------------------------------------------------------------------


@pytest.mark.parametrize("trajectory_fixture", ["mini", "claude", "lm32b", "openhands"])
def test_every_format_round_trips_through_atrium_json(trajectory_fixture, request, tmp_path):
    original: Trajectory = request.getfixturevalue(trajectory_fixture)
    target = write_atrium(original, tmp_path / "session.atrium.json")
    assert not (tmp_path / "session.atrium.json.tmp").exists()
    loaded = read_atrium(json.loads(target.read_text()), path=original.path)
    assert loaded == original
