"""Issue 24: 30 slow requests on one gateway key stalled everyone's gateway. A key now has
at most ATRIUM_GATEWAY_KEY_CONCURRENCY requests in flight in a web process: past that it
gets a 429 with a Retry-After (the SDKs wait and retry), while another key's requests go
through at once. Against a real Daphne with an upstream that answers slowly."""

from __future__ import annotations

import concurrent.futures
import json
import time
import urllib.error
import urllib.request

import pytest

from endpoint.keys import gateway_key_create
from tests.conftest import start_daphne
from tests.endpoint.conftest import UPSTREAM_KEY, owner, wire  # noqa: F401 - the endpoint tests' fixtures
from tests.rooms.factories import make_agent, make_room

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def test_one_keys_slow_requests_are_capped_and_another_key_is_served_meanwhile(owner, wire, tmp_path, settings):  # noqa: F811
    settings.ATRIUM_GATEWAY_SESSIONS = False
    server = start_daphne(tmp_path / "daphne.log", ATRIUM_GATEWAY_SESSIONS="False", ATRIUM_GATEWAY_KEY_CONCURRENCY="2")
    try:
        agent = make_agent("gpt", "openai:gpt-4.1", base_url=wire.url + "/v1", api_key=UPSTREAM_KEY, owner=owner)
        room = make_room(owner, "Room", agents=[agent])
        busy, other = (gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name=n).token
                       for n in ("busy", "other"))
        for _ in range(2):
            wire.reply("/v1/chat/completions", json_body=CHAT, delay=3.0)
        wire.reply("/v1/chat/completions", json_body=CHAT)

        def ask(token: str) -> tuple[int, float, dict[str, str]]:
            started = time.monotonic()
            request = urllib.request.Request(
                f"{server.url}/v1/chat/completions", method="POST",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return answer.status, time.monotonic() - started, dict(answer.headers)
            except urllib.error.HTTPError as refused:
                return refused.code, time.monotonic() - started, dict(refused.headers)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            slow = [pool.submit(ask, busy) for _ in range(2)]
            time.sleep(1.0)  # both are upstream now
            third_status, third_took, third_headers = ask(busy)
            other_status, other_took, _ = ask(other)
            assert [f.result()[0] for f in slow] == [200, 200]
        assert third_status == 429 and third_took < 2 and third_headers["Retry-After"] == "1"
        assert other_status == 200 and other_took < 2
        # The slots come back: the busy key is served again.
        wire.reply("/v1/chat/completions", json_body=CHAT)
        assert ask(busy)[0] == 200
    finally:
        server.hub_process.stop()
