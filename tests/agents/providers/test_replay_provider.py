"""`replay:` provider: stateless turn selection from a recording file."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from agents.providers import InvalidModelSpec, ReplayProvider, provider_for
from observations.gateway.messages import Message, ToolCall, Usage
from tests.agents.providers.requests import first_request

RECORDING = {
    "model": "recorded-gpt",
    "turns": [
        {
            "text": "Running the tests.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "pytest -q"}}],
        },
        {
            "text": "Fixing add().",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "calc.py", "old": "a - b", "new": "a + b"},
                },
                {"name": "shell", "arguments": {"command": "pytest -q"}, "id": "fixed-id"},
            ],
            "usage": {"input_tokens": 5000, "cached_input_tokens": 4000, "output_tokens": 50},
        },
        {"text": "Done: add() adds."},
    ],
}


@pytest.fixture
def replay_dir(tmp_path):
    (tmp_path / "demo.json").write_text(json.dumps(RECORDING))
    return tmp_path


def after_turns(played: int):
    """A request holding ``played`` assistant messages (with their tool results)."""
    messages = [Message("user", "Objective: fix add().")]
    for n in range(played):
        messages.append(
            Message("assistant", f"turn {n}", tool_calls=(ToolCall(f"c{n}", "shell", {}),))
        )
        messages.append(Message("tool", "ok", tool_call_id=f"c{n}", tool_name="shell"))
    return replace(first_request(), messages=tuple(messages))


def test_the_turn_played_is_the_number_of_assistant_messages_in_the_request(replay_dir):
    provider = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir)

    first = provider.complete(after_turns(0))
    second = provider.complete(after_turns(1))
    third = provider.complete(after_turns(2))

    assert first.text == "Running the tests."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("replay-0-0", "shell", {"command": "pytest -q"})
    ]
    assert first.stop_reason == "tool_use"
    assert [c.id for c in second.tool_calls] == ["replay-1-0", "fixed-id"]
    assert third.text == "Done: add() adds." and third.tool_calls == ()
    assert third.stop_reason == "end_turn"
    assert first.model == "recorded-gpt"


def test_a_resumed_session_gets_the_same_turn_for_the_same_request(replay_dir):
    request = after_turns(1)

    before_restart = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir).complete(request)
    after_restart = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir).complete(request)

    assert before_restart == after_restart


def test_after_the_last_turn_the_model_says_the_recording_ended(replay_dir):
    provider = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir)

    turn = provider.complete(after_turns(3))
    later = provider.complete(after_turns(7))

    assert "recording demo.json has ended after 3 turns" in turn.text
    assert turn.tool_calls == () and later.tool_calls == ()
    assert turn.stop_reason == "end_turn"


def test_recorded_usage_is_reported_as_recorded(replay_dir):
    turn = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir).complete(after_turns(1))

    assert turn.usage == Usage(input_tokens=5000, cached_input_tokens=4000, output_tokens=50)


def test_missing_usage_is_estimated_deterministically_and_grows_with_the_request(replay_dir):
    provider = ReplayProvider.from_spec("demo.json", replay_dir=replay_dir)
    small, large = after_turns(0), replace(after_turns(0), messages=(Message("user", "x" * 4000),))

    first = provider.complete(small)

    assert first.usage == provider.complete(small).usage
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert first.usage.cached_input_tokens == 0  # nothing is cached on a first call
    assert provider.complete(large).usage.input_tokens > first.usage.input_tokens + 500
    later = provider.complete(replace(after_turns(2), stable_prefix_end=2))
    assert 0 < later.usage.cached_input_tokens < later.usage.input_tokens


def test_a_bare_list_of_turns_is_a_recording(tmp_path):
    (tmp_path / "bare.json").write_text(json.dumps([{"text": "only turn"}]))

    turn = ReplayProvider.from_spec("bare.json", replay_dir=tmp_path).complete(first_request())

    assert turn.text == "only turn"
    assert turn.model == "replay"


def test_the_factory_resolves_relative_names_in_the_replay_folder_and_wraps_the_provider(
    replay_dir,
):
    provider = provider_for("replay:demo.json", replay_dir=replay_dir, env={})

    completion = provider.call(after_turns(0))

    assert completion.turn.text == "Running the tests."
    assert completion.record.model == "replay:demo.json"
    assert completion.record.usage_reported


@pytest.mark.parametrize("spelled", ["{elsewhere}/demo.json", "{elsewhere}/absent.json", "../other/demo.json",
                                     "../other/absent.json", "link.json", "/etc/passwd", "/nonexistent"])
def test_only_files_in_the_replay_folder_play_and_refusals_do_not_say_what_exists(
        replay_dir, tmp_path_factory, spelled):
    elsewhere = tmp_path_factory.mktemp("other")
    (elsewhere / "demo.json").write_text(json.dumps(RECORDING))
    (replay_dir / "link.json").symlink_to(elsewhere / "demo.json")
    name = spelled.format(elsewhere=elsewhere).replace("../other", os.path.relpath(elsewhere, replay_dir))

    with pytest.raises(InvalidModelSpec) as refused:
        ReplayProvider.from_spec(name, replay_dir=replay_dir)

    assert str(refused.value) == f"replay:{name} must name a file in the hub's replay folder, " \
                                 "e.g. replay:demo-fix-median.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not readable JSON"),
        ('{"turns": 3}', "expected a list of turns"),
        ('[{"text": 5}]', "turn 0: 'text' must be a string"),
        ('[{"tool_calls": [{"arguments": {}}]}]', "call 0: needs a non-empty 'name'"),
        (
            '[{"tool_calls": [{"name": "shell", "arguments": "pytest"}]}]',
            "'arguments' must be an object",
        ),
        ('[{"text": "a"}, {"usage": {"tokens": 3}}]', "turn 1: 'usage' takes only"),
        ('[{"usage": {"input_tokens": -1}}]', "non-negative integers"),
    ],
)
def test_a_malformed_recording_is_refused_with_the_turn_that_is_wrong(tmp_path, content, message):
    (tmp_path / "bad.json").write_text(content)

    with pytest.raises(InvalidModelSpec, match=message):
        ReplayProvider.from_spec("bad.json", replay_dir=tmp_path)


def test_a_missing_recording_names_the_path(tmp_path):
    with pytest.raises(InvalidModelSpec, match="replay file not found: absent.json is not in the hub's replay"):
        provider_for("replay:absent.json", replay_dir=tmp_path, env={})
