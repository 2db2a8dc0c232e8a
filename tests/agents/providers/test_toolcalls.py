"""A call's arguments as the upstream is sent them, written once per call."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from agents.providers.toolcalls import MALFORMED_ARGUMENTS_KEY, call_arguments_text
from observations.gateway.messages import ToolCall
from tests.agents.providers.test_records import JSON_VALUES, TEXTS

ARGUMENTS = st.dictionaries(TEXTS, JSON_VALUES, max_size=3)


@given(ARGUMENTS, ARGUMENTS)
def test_a_calls_arguments_text_is_its_arguments_json_and_a_changed_copy_has_its_own(arguments, others):
    call = ToolCall("c", "read_file", arguments)
    written = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    assert call_arguments_text(call) == written
    assert call_arguments_text(call) == written  # kept
    assert call_arguments_text(replace(call, arguments=others)) == json.dumps(others, sort_keys=True,
                                                                                ensure_ascii=False)


def test_malformed_arguments_go_back_as_the_model_wrote_them():
    assert call_arguments_text(ToolCall("c", "read_file", {MALFORMED_ARGUMENTS_KEY: '{"path": '})) == '{"path": '
