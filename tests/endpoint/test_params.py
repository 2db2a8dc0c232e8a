"""What a client's parameters become when the gateway makes the upstream call: carried
in the upstream provider's words, refused naming the field, or ignored and named.
Plain Python."""

from __future__ import annotations

import pytest

from endpoint.params import decide
from endpoint.wire import WireError
from observations.gateway.messages import Params, ToolChoice

OPENAI_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
ANTHROPIC_TOOLS = [{"name": "shell", "input_schema": {"type": "object"}}]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": OPENAI_TOOLS}
MESSAGES = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
            "tools": ANTHROPIC_TOOLS}


def test_an_openai_clients_settings_are_said_in_neutral_words_for_either_upstream():
    body = {**CHAT, "temperature": 0.2, "top_p": 0.9, "stop": "END", "parallel_tool_calls": False, "user": "u-1",
            "tool_choice": {"type": "function", "function": {"name": "read_file"}}}
    expected = Params(temperature=0.2, top_p=0.9, stop=("END",), tool_choice=ToolChoice("tool", "read_file"),
                      parallel_tool_calls=False, user="u-1")
    assert decide("openai", body, upstream="openai").params == expected
    assert decide("openai", body, upstream="anthropic").params == expected
    assert decide("openai", {**CHAT, "stop": ["a", "b"]}, upstream="openai").params.stop == ("a", "b")
    for mode in ("auto", "none", "required"):
        assert decide("openai", {**CHAT, "tool_choice": mode}, upstream="anthropic").params.tool_choice == \
            ToolChoice(mode)


def test_an_anthropic_clients_settings_are_said_in_neutral_words():
    body = {**MESSAGES, "temperature": 1, "top_p": 0.5, "stop_sequences": ["\nObservation:"],
            "metadata": {"user_id": "u-2"}, "tool_choice": {"type": "any", "disable_parallel_tool_use": True}}
    decided = decide("anthropic", body, upstream="openai")
    assert decided.params == Params(temperature=1, top_p=0.5, stop=("\nObservation:",),
                                    tool_choice=ToolChoice("required"), parallel_tool_calls=False, user="u-2")
    assert decided.ignored == ()
    named = decide("anthropic", {**MESSAGES, "tool_choice": {"type": "tool", "name": "shell"}}, upstream="openai")
    assert (named.params.tool_choice, named.params.parallel_tool_calls) == (ToolChoice("tool", "shell"), None)
    assert decide("anthropic", {**MESSAGES, "tool_choice": {"type": "none"}},
                  upstream="anthropic").params.tool_choice == ToolChoice("none")


def test_every_other_field_goes_as_it_is_to_an_upstream_of_the_clients_own_format():
    body = {**CHAT, "seed": 7, "response_format": {"type": "json_object"}, "logit_bias": {"50256": -100},
            "reasoning_effort": "low", "top_k": 20, "n": 1, "stream_options": {"include_usage": True},
            "max_completion_tokens": 50, "stream": True}
    native = decide("openai", body, upstream="openai").params.native
    # What the endpoint reads itself (the stream, the limit, n) is not sent again.
    assert native == {"openai": {"seed": 7, "response_format": {"type": "json_object"},
                                 "logit_bias": {"50256": -100}, "reasoning_effort": "low", "top_k": 20}}
    anthropic = decide("anthropic", {**MESSAGES, "top_k": 5, "service_tier": "auto", "system": "s"},
                       upstream="anthropic")
    assert anthropic.params.native == {"anthropic": {"top_k": 5, "service_tier": "auto"}}


def test_hints_and_unknown_fields_are_ignored_for_the_other_provider_and_named():
    body = {**CHAT, "seed": 7, "store": True, "metadata": {"run": "1"}, "service_tier": "auto",
            "prompt_cache_key": "k", "vendor_extra": {"x": 1}, "presence_penalty": 0, "logit_bias": {},
            "response_format": {"type": "text"}}
    decided = decide("openai", body, upstream="anthropic")
    assert decided.ignored == ("metadata", "prompt_cache_key", "seed", "service_tier", "store", "vendor_extra")
    assert decided.params.native == {}
    assert decide("anthropic", {**MESSAGES, "service_tier": "auto"}, upstream="openai").ignored == ("service_tier",)


def test_the_clients_own_headers_go_to_an_upstream_of_its_format_only():
    headers = {"anthropic-beta": "effort-2025-11-24,context-1m-2025-08-07", "x-api-key": "atr-gw-key"}
    assert decide("anthropic", MESSAGES, upstream="anthropic", headers=headers).params.headers == {
        "anthropic-beta": "effort-2025-11-24,context-1m-2025-08-07"}
    assert decide("anthropic", MESSAGES, upstream="openai", headers=headers).params.headers == {}
    # Not the betas of what the gateway leaves out: named by their feature instead.
    claude_code = {"anthropic-beta": "claude-code-20250219, interleaved-thinking-2025-05-14,effort-2025-11-24,"
                                     "context-management-2025-06-27,mid-conversation-system-2026-04-07\r\nX: y"}
    decided = decide("anthropic", MESSAGES, upstream="anthropic", headers=claude_code)
    assert decided.params.headers == {"anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,"
                                                        "effort-2025-11-24"}
    assert decided.ignored == ("anthropic-beta.context-management", "anthropic-beta.mid-conversation-system")
    assert decide("openai", CHAT, upstream="openai", headers=headers).params.headers == {}


@pytest.mark.parametrize(("upstream", "model", "thinking", "effort"), [
    ("anthropic", "anthropic:claude-sonnet-4-5", (), None),
    ("openai", "openai:gpt-4.1", ("messages.thinking", "thinking"), None),
    ("openai", "openai:o4-mini", ("messages.thinking",), "medium"),
])
def test_claude_codes_defaults_context_management_and_cache_marks_named_its_thinking_where_it_can_go(
        upstream, model, thinking, effort):
    """Claude Code's defaults: the gateway folds the context itself and marks its own
    cache, so those are left out, and said. Its thinking goes to an Anthropic upstream as
    it is, with its blocks; to an OpenAI reasoning model as an effort; to another OpenAI
    model not at all, and said."""
    body = {**MESSAGES, "thinking": {"type": "adaptive"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "system": [{"type": "text", "text": "You are", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
                         {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                                           {"type": "text", "text": "Hello."}]},
                         {"role": "user", "content": "go on"}]}
    decided = decide("anthropic", body, upstream=upstream, model=model)
    assert decided.ignored == tuple(sorted(("context_management", "messages.cache_control", "system.cache_control",
                                            *thinking)))
    assert decided.params.native == ({"anthropic": {"thinking": {"type": "adaptive"}}} if upstream == "anthropic"
                                     else {})
    assert decided.params.effort == effort


@pytest.mark.parametrize(("fmt", "upstream", "extra", "param"), [
    ("openai", "openai", {"n": 2}, "n"),
    ("openai", "anthropic", {"n": 3}, "n"),
    ("openai", "openai", {"logprobs": True}, "logprobs"),
    ("openai", "openai", {"top_logprobs": 2}, "top_logprobs"),
    ("openai", "openai", {"modalities": ["text", "audio"]}, "modalities"),
    ("openai", "openai", {"audio": {"voice": "alloy"}}, "audio"),
    ("openai", "openai", {"functions": [{"name": "f"}]}, "functions"),
    ("openai", "anthropic", {"response_format": {"type": "json_object"}}, "response_format"),
    ("openai", "anthropic", {"presence_penalty": 0.5}, "presence_penalty"),
    ("openai", "anthropic", {"logit_bias": {"1": 5}}, "logit_bias"),
    ("openai", "anthropic", {"reasoning_effort": "minimal"}, "reasoning_effort"),
    ("openai", "anthropic", {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     "response_format"),
    ("anthropic", "openai", {"output_config": {"format": {"type": "json_object"}}}, "output_config.format"),
    ("anthropic", "openai", {"output_config": {"speed": "fast"}}, "output_config.speed"),
    ("anthropic", "openai", {"output_config": "high"}, "output_config"),
    ("openai", "anthropic", {"temperature": 1.5}, "temperature"),
    ("openai", "openai", {"temperature": 2.5}, "temperature"),
    ("openai", "openai", {"top_p": 1.5}, "top_p"),
    ("openai", "anthropic", {"temperature": "hot"}, "temperature"),
    ("openai", "openai", {"temperature": True}, "temperature"),
    ("anthropic", "anthropic", {"top_p": [1]}, "top_p"),
    ("openai", "openai", {"stop": [1]}, "stop"),
    ("openai", "openai", {"user": 5}, "user"),
    ("openai", "openai", {"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ("openai", "openai", {"tool_choice": "any"}, "tool_choice"),
    ("openai", "openai", {"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
    ("openai", "anthropic", {"tool_choice": {"type": "allowed_tools", "allowed_tools": {}}}, "tool_choice"),
    ("anthropic", "openai", {"mcp_servers": [{"type": "url"}]}, "mcp_servers"),
    ("anthropic", "openai", {"top_k": 5}, "top_k"),
    ("anthropic", "openai", {"stop_sequences": "END"}, "stop_sequences"),
    ("anthropic", "openai", {"metadata": "u"}, "metadata"),
    ("anthropic", "openai", {"metadata": {"user_id": 3}}, "metadata.user_id"),
    ("anthropic", "openai", {"tool_choice": {"type": "required"}}, "tool_choice.type"),
    ("anthropic", "openai", {"tool_choice": {"type": ["auto"]}}, "tool_choice.type"),
    ("anthropic", "openai", {"tool_choice": {"type": {}}}, "tool_choice.type"),
    ("anthropic", "openai", {"tool_choice": {"type": "tool"}}, "tool_choice.name"),
    ("anthropic", "openai", {"tool_choice": {"type": "tool", "name": "other"}}, "tool_choice"),
    ("anthropic", "openai", {"tool_choice": {"type": "auto", "disable_parallel_tool_use": 1}},
     "tool_choice.disable_parallel_tool_use"),
])
def test_what_cannot_be_honoured_is_refused_naming_the_field(fmt, upstream, extra, param):
    body = {**(CHAT if fmt == "openai" else MESSAGES), **extra}
    with pytest.raises(WireError) as refused:
        decide(fmt, body, upstream=upstream)
    assert (refused.value.status, refused.value.param) == (400, param)
    assert refused.value.message.startswith(param.split(".")[0])


def test_a_field_at_its_default_asks_for_nothing_and_is_not_refused():
    body = {**CHAT, "n": 1, "logprobs": False, "top_logprobs": 0, "modalities": ["text"], "temperature": None,
            "frequency_penalty": 0, "response_format": {"type": "text"}}
    assert decide("openai", body, upstream="anthropic").params == Params()
    assert decide("anthropic", {**MESSAGES, "thinking": {"type": "disabled"}}, upstream="openai").params == Params()
    budgets = {1024: "low", 8000: "medium", 32_000: "high"}
    assert {budget: decide("anthropic", {**MESSAGES, "thinking": {"type": "enabled", "budget_tokens": budget}},
                           upstream="openai", model="gpt-5").params.effort for budget in budgets} == budgets
    assert decide("anthropic", {**MESSAGES, "thinking": {"type": "enabled", "budget_tokens": 32_000},
                                "output_config": {"effort": "low"}}, upstream="openai", model="o3").params.effort \
        == "low"  # the effort the client gave wins


def test_a_tool_choice_that_needs_a_tool_needs_tools_and_one_that_does_not_is_harmless_without():
    bare = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(WireError, match="needs `tools`"):
        decide("openai", {**bare, "tool_choice": "required"}, upstream="openai")
    assert decide("openai", {**bare, "tool_choice": "none"}, upstream="openai").params.tool_choice == ToolChoice("none")


def test_the_answers_json_schema_and_the_reasoning_effort_cross_between_the_formats():
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    body = {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}},
            "reasoning_effort": "high"}
    crossed = decide("openai", body, upstream="anthropic").params
    assert (crossed.json_schema, crossed.effort, crossed.native) == (schema, "high", {})
    # The same format keeps its own words.
    same = decide("openai", body, upstream="openai").params
    assert (same.json_schema, same.effort) == (None, None)
    assert same.native["openai"]["response_format"]["json_schema"]["name"] == "verdict"

    config = {"format": {"type": "json_schema", "schema": schema}, "effort": "max"}
    back = decide("anthropic", {**MESSAGES, "output_config": config}, upstream="openai").params
    assert (back.json_schema, back.effort) == (schema, "max")
    assert decide("anthropic", {**MESSAGES, "output_config": config},
                  upstream="anthropic").params.native == {"anthropic": {"output_config": config}}


def test_what_the_gateway_decides_itself_is_ignored_and_named():
    body = {**MESSAGES, "cache_control": {"type": "ephemeral"}, "diagnostics": {"previous_message_id": "msg_1"},
            "top_k": 3}
    decided = decide("anthropic", body, upstream="anthropic")
    assert decided.ignored == ("cache_control", "diagnostics")
    assert decided.params.native == {"anthropic": {"top_k": 3}}


def test_a_field_name_no_response_header_could_carry_is_refused_for_the_other_provider():
    """Fields ignored for the other provider are named in a response header: a name with a
    line break would fail there, after the upstream call was made."""
    with pytest.raises(WireError) as refused:
        decide("openai", {**CHAT, "a\nb": 1}, upstream="anthropic")
    assert refused.value.status == 400 and "not a field" in refused.value.message
    assert decide("openai", {**CHAT, "x-trace.id_2": 1}, upstream="anthropic").ignored == ("x-trace.id_2",)
