"""Keys: the SDKs' 401 for a missing, wrong or revoked key, a key of one room refused at
another room's URL, and malformed bodies refused with the field named, each in the
client's own format. None of them reach the upstream."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from endpoint.keys import gateway_key_create, gateway_key_revoke
from rooms.services import agent_unassign
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.timeout(120)


def post(url: str, body: bytes | str, **headers: str) -> tuple[int, dict, dict]:
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def test_missing_wrong_and_revoked_keys_get_each_providers_401(setup, owner, wire, hub):
    for key in ("", "sk-not-ours", "atr-gw-" + "x" * 43, "atr-gw-" + "y" * 500):
        with pytest.raises(openai.AuthenticationError) as caught:
            openai.OpenAI(base_url=hub.url + "/v1", api_key=key or "-", max_retries=0).models.list()
        assert caught.value.code == "invalid_api_key"
        assert caught.value.body["type"] == "authentication_error"
        with pytest.raises(anthropic.AuthenticationError) as caught:
            anthropic.Anthropic(base_url=hub.url, api_key=key or "-", max_retries=0).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert caught.value.body == {"type": "error", "error": {"type": "authentication_error",
                                                                "message": caught.value.body["error"]["message"]}}
    status, _, body = post(hub.url + "/v1/chat/completions", "{}")  # no header at all
    assert status == 401 and body["error"]["code"] == "invalid_api_key"

    key = setup.room.gateway_keys.get(agent__name="gpt")
    gateway_key_revoke(room=setup.room, actor=owner, key_id=key.pk)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.openai_key, max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    # An agent unassigned from the room takes its keys' reach with it.
    agent_unassign(room=setup.room, actor=owner, agent_id=setup.room.gateway_keys.get(agent__name="claude").agent_id)
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0).models.list()
    assert wire.requests == []


def test_a_key_never_reaches_another_room(setup, wire, hub):
    mallory = make_user("mallory")
    agent = make_agent("mallory-gpt", "openai:gpt-4.1", base_url=wire.url + "/v1", api_key="sk-mallory",
                       owner=mallory)
    own_room = make_room(mallory, "Attacker room", agents=[agent])
    token = gateway_key_create(room=own_room, actor=mallory, agent_id=agent.pk, name="mine").token

    victim = openai.OpenAI(base_url=f"{hub.url}/rooms/{setup.room.slug}/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        victim.models.list()
    with pytest.raises(openai.AuthenticationError):
        victim.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=f"{hub.url}/rooms/{setup.room.slug}", api_key=token, max_retries=0) \
            .messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    # Not even a room that does not exist answers differently.
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{hub.url}/rooms/no-such-room/v1", api_key=token, max_retries=0).models.list()
    assert wire.requests == []
    # The victim's key works at its own room's URL; the attacker's at theirs.
    own = openai.OpenAI(base_url=f"{hub.url}/rooms/{setup.room.slug}/v1", api_key=setup.openai_key, max_retries=0)
    assert [m.id for m in own.models.list()] == ["gpt-4.1"]
    wire.reply("/v1/chat/completions", json_body={"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
                                                  "choices": [{"index": 0, "finish_reason": "stop",
                                                               "message": {"role": "assistant", "content": "ok"}}]})
    mine = openai.OpenAI(base_url=f"{hub.url}/rooms/{own_room.slug}/v1", api_key=token, max_retries=0)
    assert mine.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}]) \
        .choices[0].message.content == "ok"
    assert wire.requests[-1].headers["authorization"] == "Bearer sk-mallory"


OPENAI_BAD = [
    (b"not json", None),
    (b"[1, 2]", None),
    (b"\xff\xfe", None),
    # Unpaired surrogates: JSON escapes of no Unicode character (a pair, an emoji, is one).
    (b'{"model": "m", "messages": [{"role": "user", "content": "hi \\ud83d there"}]}', None),
    (b'{"model": "m", "messages": [{"role": "user", "content": "\\ude00"}]}', None),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}]}), "model"),
    (json.dumps({"model": "m"}), "messages"),
    (json.dumps({"model": "m", "messages": "hi"}), "messages"),
    (json.dumps({"model": "m", "messages": []}), "messages"),
    (json.dumps({"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}), "messages[0].role"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": 5}]}), "messages[0].content"),
    (json.dumps({"model": "m", "messages": [{"role": "tool", "content": "x"}]}), "messages[0].tool_call_id"),
    (json.dumps({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]}),
     "messages[0].tool_calls[0]"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}),
     "tools[0].function.name"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": "yes"}), "stream"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}), "max_tokens"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}),
     "temperature"),
]
ANTHROPIC_BAD = [
    (b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "\\ud800"}]}', "The request body"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}), "max_tokens"),
    (json.dumps({"model": "m", "max_tokens": 0, "messages": []}), "max_tokens"),
    (json.dumps({"model": "m", "max_tokens": 5}), "messages"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "robot", "content": "hi"}]}),
     "messages.0.role"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"text": "x"}]}]}),
     "messages.0.content.0"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                 "tools": [{"name": "shell"}]}), "tools.0.input_schema"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "system": 3}),
     "system"),
]


def test_malformed_bodies_get_a_400_naming_the_field_in_the_clients_format(setup, wire, hub):
    for raw, field in OPENAI_BAD:
        status, _, body = post(hub.url + "/v1/chat/completions", raw, Authorization=f"Bearer {setup.openai_key}")
        assert status == 400, raw
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["param"] == field, raw
        if field:
            assert field.split("[")[0] in body["error"]["message"]
    for raw, field in ANTHROPIC_BAD:
        status, _, body = post(hub.url + "/v1/messages", raw, **{"x-api-key": setup.anthropic_key})
        assert status == 400, raw
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith(field), (raw, body)
    # The SDK reads the same refusal.
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0).messages.create(
            model="m", max_tokens=0, messages=[{"role": "user", "content": "hi"}])
    assert wire.requests == []


def test_a_replay_agent_is_refused_and_other_paths_and_methods_say_so_in_json(setup, wire, hub):
    hi = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    status, _, body = post(hub.url + "/v1/chat/completions", json.dumps(hi), Authorization=f"Bearer {setup.replay_key}")
    assert status == 400 and "replay:demo.jsonl" in body["error"]["message"]
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.openai_key, max_retries=0).embeddings.create(
            model="m", input="hi")
    request = urllib.request.Request(hub.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {setup.openai_key}"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 405 and json.loads(caught.value.read())["error"]["type"] == "invalid_request_error"
    assert wire.requests == []


@pytest.mark.django_db
def test_a_profile_without_an_upstream_key_is_a_502_naming_the_agent(monkeypatch):
    """Issue 30: it was a 500; the client's key is fine, the gateway has no upstream it may call."""
    from agents.models import AgentProfile
    from endpoint.upstream import profile_endpoint
    from endpoint.wire import WireError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    profile = AgentProfile(name="keyless", model="anthropic:claude-sonnet-5")
    with pytest.raises(WireError, match="'keyless' cannot reach its model: .*needs an API key") as refused:
        profile_endpoint(profile)
    assert refused.value.status == 502 and refused.value.kind == "api_error"
