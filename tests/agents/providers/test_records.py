"""Prefix hashes and call records."""

from __future__ import annotations

from dataclasses import replace

from agents.providers import CallRecord, prefix_hash, stable_prefix
from observations.gateway.messages import Message, serialize_request
from tests.agents.providers.requests import session_request


def test_the_stable_prefix_is_a_byte_prefix_of_the_serialized_request():
    request = session_request(stable_prefix_end=2)

    prefix = stable_prefix(request)

    assert serialize_request(request).startswith(prefix)
    assert prefix.count("\n") == 1 + 3  # the head line, then messages 0..2


def test_appending_messages_within_an_epoch_keeps_the_prefix_hash():
    request = session_request(stable_prefix_end=2)
    longer = replace(request, messages=request.messages + (Message("assistant", "more"),))

    assert prefix_hash(longer) == prefix_hash(request)


def test_a_change_inside_the_prefix_changes_the_hash():
    request = session_request(stable_prefix_end=2)
    folded = replace(
        request,
        messages=(
            *request.messages[:2],
            replace(request.messages[2], text="[receipt]"),
            *request.messages[3:],
        ),
    )

    assert prefix_hash(folded) != prefix_hash(request)


def test_without_a_prefix_end_only_system_and_tools_are_hashed():
    request = session_request(stable_prefix_end=-1)
    other_messages = replace(request, messages=(Message("user", "something else"),))

    assert prefix_hash(request) == prefix_hash(other_messages)
    assert prefix_hash(request) != prefix_hash(replace(request, system="another system prompt"))


def test_a_record_serializes_to_plain_data():
    record = CallRecord(
        model="openai:a", requested_model="openai:a", prefix_hash="0" * 64, input_tokens=5
    )

    data = record.to_dict()

    assert data["input_tokens"] == 5 and data["error"] is None
    assert set(data) >= {
        "model",
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "latency_ms",
        "prefix_hash",
        "error",
    }
