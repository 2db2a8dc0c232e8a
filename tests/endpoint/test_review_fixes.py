"""What an attacker next to a room tries through the gateway endpoint: a key kept after
its maker left the room, a profile whose base URL is another service, a profile that
points back at the gateway, odd bodies; and what a client sends arriving as sent."""

from __future__ import annotations

import json

import openai
import pytest

from agents.forms import AgentProfileForm
from rooms.models import RoomAgent
from rooms.services import membership_remove
from tests.endpoint.test_keys_and_errors import post
from tests.rooms.factories import make_agent, make_user

pytestmark = pytest.mark.timeout(120)

HI = [{"role": "user", "content": "hi"}]
COMPLETION = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def test_a_key_stops_working_when_its_maker_leaves_the_room_or_becomes_a_viewer(setup, owner, wire, hub):
    from endpoint.keys import gateway_key_create
    from rooms.models import Membership

    bob = make_user("bob")
    Membership.objects.create(room=setup.room, user=bob, role="member")
    # A profile on the hub's keys: anyone who acts in the room may key it.
    shared = make_agent("shared-gpt", "openai:gpt-4.1")
    RoomAgent.objects.create(room=setup.room, agent=shared)
    token = gateway_key_create(room=setup.room, actor=bob, agent_id=shared.pk, name="bob's").token
    client = openai.OpenAI(base_url=hub.url + "/v1", api_key=token, max_retries=0)
    assert client.models.list()  # a member's key works
    Membership.objects.filter(room=setup.room, user=bob).update(role="viewer")
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    Membership.objects.filter(room=setup.room, user=bob).update(role="member")
    assert client.models.list()
    membership_remove(room=setup.room, actor=owner, user_id=bob.pk)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()


@pytest.mark.parametrize("mode", ["sessions", "relay"])
def test_a_profiles_own_url_is_relayed_only_when_it_answers_as_the_provider(setup, wire, mode, request):
    hub = request.getfixturevalue("hub" if mode == "sessions" else "relay_hub")
    client = openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.openai_key, max_retries=0)
    wire.reply("/v1/chat/completions", json_body={"internal_secret": "s3cr3t"})
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=HI)
    assert caught.value.status_code in (500, 502) and "s3cr3t" not in caught.value.response.text
    wire.reply("/v1/chat/completions", status=404, text='{"internal_secret": "s3cr3t"}')
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=HI)
    assert "s3cr3t" not in caught.value.response.text
    wire.reply("/v1/chat/completions", status=200, text="<html>admin s3cr3t</html>", headers={})
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=HI, stream=True)
    assert "s3cr3t" not in caught.value.response.text
    wire.reply("/v1/chat/completions", json_body=COMPLETION)
    assert client.chat.completions.create(model="m", messages=HI).choices[0].message.content == "ok"


def test_a_request_from_a_gateway_is_refused_and_a_gateway_key_is_no_agents_key(setup, wire, relay_hub):
    hub = relay_hub
    status, _, body = post(hub.url + "/v1/chat/completions", json.dumps({"model": "m", "messages": HI}),
                           Authorization=f"Bearer {setup.openai_key}", **{"X-Atrium-Gateway-Hop": "1"})
    assert status == 508 and "call itself" in body["error"]["message"]
    assert wire.requests == []
    wire.reply("/v1/chat/completions", json_body=COMPLETION)
    openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.openai_key, max_retries=0).chat.completions.create(
        model="m", messages=HI)
    assert wire.requests_to("/v1/chat/completions")[0].headers.get("x-atrium-gateway-hop") == "1"
    form = AgentProfileForm(data={"name": "loop", "model": "openai:gpt-4.1", "base_url": hub.url + "/v1",
                                  "new_api_key": setup.openai_key})
    assert not form.is_valid() and "gateway key" in str(form.errors["new_api_key"])


def test_an_openai_clients_max_tokens_reaches_the_upstream(setup, wire, hub):
    wire.reply("/v1/chat/completions", json_body=COMPLETION)
    openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.openai_key, max_retries=0).chat.completions.create(
        model="m", messages=HI, max_tokens=7)
    assert wire.requests_to("/v1/chat/completions")[0].json["max_tokens"] == 7


def test_odd_bodies_get_a_400_naming_the_field_not_a_500(setup, wire, hub):
    call = {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                  "function": {"name": "f", "arguments": 123}}]}
    status, _, body = post(hub.url + "/v1/chat/completions", json.dumps({"model": "m", "messages": [*HI, call]}),
                           Authorization=f"Bearer {setup.openai_key}")
    assert status == 400 and body["error"]["param"] == "messages[1].tool_calls[0].function.arguments"
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}
    status, _, body = post(hub.url + "/v1/messages", json.dumps({"model": "m", "max_tokens": 5, "messages": [*HI, use]}),
                           **{"x-api-key": setup.anthropic_key})
    assert status == 400 and ".input" in body["error"]["message"]
    status, _, body = post(hub.url + "/v1/chat/completions", "[" * 100_000 + "]" * 100_000,
                           Authorization=f"Bearer {setup.openai_key}")
    assert status == 400 and "nests too deeply" in body["error"]["message"]
    assert wire.requests == []
