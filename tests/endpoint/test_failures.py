"""What goes wrong between the endpoint and the upstream reaches the client as an error
in its own format, never as a traceback or a Django page: an unreachable upstream, a
bug of ours, a stream that breaks off after its headers went out."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from agents.providers.factory import UpstreamEndpoint
from endpoint import upstream
from endpoint.keys import gateway_key_create
from endpoint.upstream import _stream
from tests.agents.providers.wire_server import RefusingEndpoint
from tests.rooms.factories import make_agent, make_room, make_user

HI = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})


@pytest.fixture(autouse=True)
def relay_only(settings):
    """These failures are the relay's (pass-through); the sessions' are in test_sessions."""
    settings.ATRIUM_GATEWAY_SESSIONS = False


@pytest.fixture
def refusing():
    endpoint = RefusingEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture
def key(transactional_db, refusing) -> str:
    owner = make_user("olga")
    agent = make_agent("gpt", "openai:gpt-4.1", base_url=refusing.url + "/v1", api_key="sk-upstream-secret-0001",
                       owner=owner)
    room = make_room(owner, agents=[agent])
    return gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name="k").token


def post(key: str, body: str = HI):
    client = AsyncClient()
    return async_to_sync(client.post)("/v1/chat/completions", body, content_type="application/json",
                                      headers={"Authorization": f"Bearer {key}"})


def test_an_unreachable_upstream_is_a_502_in_the_clients_format(key, refusing):
    response = post(key)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "api_error" and "Cannot reach the upstream" in error["message"]
    assert "sk-upstream-secret" not in response.content.decode()


def test_a_failure_of_ours_is_a_500_without_its_details(key, monkeypatch):
    async def broken(*args, **kwargs):
        raise RuntimeError("internal detail /srv/secret")

    monkeypatch.setattr(upstream, "relay", broken)
    response = post(key)
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "The gateway failed to handle this request.",
                                         "type": "api_error", "param": None, "code": None}}
    assert "secret" not in response.content.decode() and "Traceback" not in response.content.decode()


class BreakingResponse:
    """An upstream response whose stream ends in a read error after one event."""

    async def iter_bytes(self):
        yield b'data: {"id": "c"}\n\n'
        raise ConnectionResetError("peer reset")


@pytest.mark.parametrize(("fmt", "start"), [("openai", "data: "), ("anthropic", "event: error\ndata: ")])
def test_a_stream_that_breaks_off_ends_with_an_error_event_and_closes_the_upstream(fmt, start):
    closed = []
    endpoint = UpstreamEndpoint(fmt, "m", "http://upstream.invalid", "sk-x", False)

    async def run() -> list[bytes]:
        stack = contextlib.AsyncExitStack()
        stack.callback(closed.append, True)
        return [chunk async for chunk in _stream(BreakingResponse(), stack, endpoint, fmt)]

    chunks = asyncio.run(run())
    assert chunks[0] == b'data: {"id": "c"}\n\n'
    assert chunks[1].decode().startswith(start)
    body = json.loads(chunks[1].decode().split("data: ", 1)[1])
    error = body["error"]
    assert "broke off" in error["message"] and "peer reset" not in error["message"]
    assert closed == [True]
