"""Per-call accounting through the whole runtime: the official Anthropic SDK against the
local wire server, cache writes as the provider reports them, the gateway's projection
beside them, the request's breakdown, and the cost at the price table's prices."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from agents.models import AgentProfile
from observations.gateway.messages import Usage
from observations.gateway.prices import format_usd, price_for
from rooms.models import RoomAgent
from sessions.analysis.selectors import session_facts
from sessions.analysis.trace import analyze
from sessions.models import ProviderCall
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session
from tests.sessions.runtime.test_provider_paths import wire  # noqa: F401

MESSAGES = "/v1/messages"
MODEL = "claude-sonnet-4-5"


def message(text: str, calls=(), *, plain: int, read: int, write: int, out: int, thinking: int = 0) -> dict:
    content = [{"type": "text", "text": text}] + [
        {"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
    usage = {"input_tokens": plain, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
             "output_tokens": out}
    if thinking:
        usage["output_tokens_details"] = {"thinking_tokens": thinking}
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None, "usage": usage}


@pytest.fixture
def wired_session(person, demo_room, wire, settings):  # noqa: F811
    settings.ATRIUM_PROVIDER_MAX_ATTEMPTS = 1
    agent = AgentProfile.objects.create(name="claude", model=f"anthropic:{MODEL}", base_url=wire.url,
                                        api_key="sk-ant-test", context_window=64_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    demo_room.check_command = ""
    demo_room.save()
    wire.reply(MESSAGES, json_body=message("Looking.", [("t1", "read_file", {"path": "textstats.py"})],
                                           plain=1_200, read=0, write=1_500, out=40))
    wire.reply(MESSAGES, json_body=message("Done: nothing to change.", plain=300, read=1_500, write=900, out=25,
                                           thinking=10))
    task = task_create(room=demo_room, actor=person, title="Look", objective="Read the code")
    session = session_start(task=task, agent=agent, actor=person)
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    return session


def test_cache_writes_the_projection_and_the_breakdown_are_stored_per_call(wired_session):
    calls = list(ProviderCall.objects.filter(session=wired_session).order_by("id"))
    assert [(c.input_tokens, c.cached_input_tokens, c.cache_write_tokens, c.output_tokens, c.reasoning_tokens)
            for c in calls] == [(2_700, 0, 1_500, 40, 0), (2_700, 1_500, 900, 25, 10)]
    assert all(c.projected_tokens > 0 for c in calls)
    assert calls[1].projected_tokens > calls[0].projected_tokens  # the read result was added
    for call in calls:
        assert set(call.prefix) >= {"system", "tools", "intent", "conversation"}
        assert call.prefix["tools"]["each"]["read_file"]["tokens"] > 0


def test_the_session_costs_the_sum_of_its_calls_at_the_tables_prices(client, person, wired_session):
    price = price_for(f"anthropic:{MODEL}")
    expected = [price.cost(Usage(input_tokens=2_700, cache_write_tokens=1_500, output_tokens=40)),
                price.cost(Usage(input_tokens=2_700, cached_input_tokens=1_500, cache_write_tokens=900,
                                 output_tokens=25, reasoning_tokens=10))]
    # Sonnet: $3 input, $3.75 cache write, $0.30 cache read, $15 output per million.
    assert expected == [Decimal("0.0036") + Decimal("0.005625") + Decimal("0.0006"),
                        Decimal("0.0009") + Decimal("0.00045") + Decimal("0.003375") + Decimal("0.000375")]
    calls = ProviderCall.objects.filter(session=wired_session).order_by("id")
    assert [c.cost_usd for c in calls] == expected
    analysis = analyze(session_facts(wired_session))
    assert analysis.cost == sum(expected) and analysis.cost_unknown_calls == 0
    assert (analysis.tokens_cache_write, analysis.tokens_cache_read, analysis.tokens_reasoning) == (2_400, 1_500, 10)
    client.force_login(person)
    html = client.get(reverse("sessions:session", args=[wired_session.pk])).content.decode()
    assert f'<span id="session-cost">{format_usd(sum(expected))}</span>' in html


def test_a_profile_price_overrides_the_table_for_its_model(person, demo_room, wire, settings):  # noqa: F811
    settings.ATRIUM_PROVIDER_MAX_ATTEMPTS = 1
    agent = AgentProfile.objects.create(name="local", model="openai:qwen3-coder", base_url=f"{wire.url}/v1",
                                        api_key="sk-local", context_window=32_000, output_budget=1_000,
                                        price_input=Decimal("1"), price_output=Decimal("4"))
    RoomAgent.objects.create(room=demo_room, agent=agent)
    demo_room.check_command = ""
    demo_room.save()
    wire.reply("/v1/chat/completions", json_body={
        "id": "c", "object": "chat.completion", "created": 1, "model": "qwen3-coder",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 500_000, "total_tokens": 1_500_000}})
    task = task_create(room=demo_room, actor=person, title="Look", objective="Read the code")
    session = session_start(task=task, agent=agent, actor=person)
    run_session(session.pk)
    assert ProviderCall.objects.get(session=session).cost_usd == Decimal("3")  # $1 + 0.5 × $4
