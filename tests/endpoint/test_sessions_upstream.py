"""Endpoint sessions while their requests are upstream and when the upstream fails: a
rate limit, two requests of one new conversation at once, a steer or a cancel meanwhile,
an unreachable upstream; and what every conversation shares."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai
import pytest

from endpoint.keys import gateway_key_create
from endpoint.models import GatewayConversation
from endpoint.sessions import _provider
from endpoint.views.api import error_response
from endpoint.wire import WireError
from sessions.models import ProviderCall, Session
from sessions.runtime import states
from sessions.services.lifecycle import session_cancel
from sessions.services.talk import session_steer
from tests.agents.providers.wire_server import RefusingEndpoint
from tests.endpoint import test_sessions
from tests.endpoint.test_sessions import FILE, PATH, Agent, client, completion, sent
from tests.rooms.factories import make_agent, make_room

pytestmark = pytest.mark.timeout(120)


def test_an_upstream_rate_limit_reaches_the_client_with_its_retry_header_and_the_session_goes_on(setup, wire, hub):
    wire.reply(PATH, status=429, json_body={"error": {"message": "Slow down", "type": "rate_limit_error"}},
               headers={"retry-after": "7"})
    wire.reply(PATH, json_body=completion(text="Hello.", n=1))
    agent = Agent(client(hub, setup.openai_key), "Say hello")
    with pytest.raises(openai.RateLimitError) as limited:
        agent.step()
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.headers["retry-after-ms"] == "7000"
    assert agent.step().content == "Hello."  # the client's retry: the same request, once in the session
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert [m["role"] for m in sent(wire)[-1]["messages"]] == ["system", "user"]
    assert ProviderCall.objects.filter(session=session).count() == 2


def test_two_requests_of_one_new_conversation_at_once_make_one_session_and_go_one_after_the_other(setup, wire, hub):
    wire.reply(PATH, json_body=completion(text="one", n=1), delay=0.5)
    wire.reply(PATH, json_body=completion(text="two", n=2))
    gateway = client(hub, setup.openai_key)
    messages = [{"role": "user", "content": "Say hello"}]
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: gateway.chat.completions.create(model="m", messages=messages), range(2)))
    assert sorted(a.choices[0].message.content for a in answers) == ["one", "two"]
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert GatewayConversation.objects.get().requests == 2
    # The second was served after the first committed: nothing new, the same request again.
    first, second = sent(wire)
    assert first["messages"] == second["messages"] == [{"role": "user", "content": "Say hello"}]
    assert ProviderCall.objects.filter(session=session).count() == 2


def test_two_requests_of_one_conversation_at_once_go_one_after_the_other(setup, wire, hub):
    """The conversation's row lock (endpoint/sessions._conversation_locked) holds the
    second request until the first committed, upstream call and all."""
    wire.reply(PATH, json_body=completion(text="Hello.", n=1))
    gateway = client(hub, setup.openai_key)
    messages = [{"role": "user", "content": "Say hello"}]
    gateway.chat.completions.create(model="m", messages=messages)
    messages += [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Again"}]
    for n in (2, 3):
        wire.reply(PATH, json_body=completion(text="Again.", n=n), delay=0.8)
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: gateway.chat.completions.create(model="m", messages=messages), range(2)))
    assert time.monotonic() - started >= 1.6  # each waited 0.8 s upstream, one after the other
    assert GatewayConversation.objects.get().requests == 3
    assert sent(wire)[1]["messages"] == sent(wire)[2]["messages"]


def test_a_steer_while_a_request_is_upstream_is_stored_at_once_and_delivered_with_the_next(setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    upstream = threading.Event()
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=2), hold=upstream)
    wire.reply(PATH, json_body=completion(text="ok", n=3))
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(agent.step)
        while len(sent(wire)) < 2:
            time.sleep(0.05)
        # Stored while the request is still held upstream: the session's row lock does not
        # hold people up (were it held, the steer would return only once the hold ended).
        person = ThreadPoolExecutor(1)
        try:
            person.submit(session_steer, session=session, actor=owner, text="Keep the signature.").result(timeout=20)
            assert not pending.done()
        finally:
            upstream.set()  # also when the steer was held up: nothing waits for the hold to run out
            person.shutdown(wait=True)
        second = pending.result()
    agent.result(second.tool_calls[0].id, FILE)
    agent.step()
    assert "Keep the signature." in sent(wire)[2]["messages"][-1]["content"]


def test_a_cancel_while_a_request_is_upstream_ends_the_session_at_once_and_refuses_the_next(setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    upstream = threading.Event()
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "util.py"}), n=2), hold=upstream)
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(agent.step)
        while len(sent(wire)) < 2:
            time.sleep(0.05)
        person = ThreadPoolExecutor(1)
        try:  # cancelled while the request is still held upstream
            person.submit(session_cancel, session=session, actor=owner).result(timeout=20)
            assert not pending.done()
        finally:
            upstream.set()
            person.shutdown(wait=True)
        second = pending.result()  # the request under way still gets its answer
    session.refresh_from_db()
    assert session.state == states.CANCELLED and session.tokens_input == 200
    agent.result(second.tool_calls[0].id, "x = 1\n")
    with pytest.raises(openai.ConflictError):
        agent.step()


def test_an_unreachable_upstream_is_a_502_in_the_clients_format_and_the_failed_call_is_on_the_ledger(owner, hub):
    refusing = RefusingEndpoint()
    try:
        agent = make_agent("far", "openai:gpt-4.1", base_url=refusing.url + "/v1", api_key="sk-upstream-0002", owner=owner)
        room = make_room(owner, agents=[agent])
        key = gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name="k").token
        with pytest.raises(openai.APIStatusError) as failed:
            Agent(client(hub, key), "Say hello").step()
    finally:
        refusing.close()
    assert failed.value.status_code == 502 and failed.value.body["type"] == "api_error"
    assert "sk-upstream-0002" not in failed.value.message
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert ProviderCall.objects.get(session=session).error


def test_the_requests_of_every_conversation_share_one_provider_per_endpoint():
    """Building a provider costs ~30 ms of CPU (its SDK client's SSL context), which held
    up every request of the process; kept, it keeps its connections too."""
    first = _provider("openai:gpt-4.1", "sk-one", "http://127.0.0.1:9/v1")
    assert _provider("openai:gpt-4.1", "sk-one", "http://127.0.0.1:9/v1") is first
    assert _provider("openai:gpt-4.1", "sk-two", "http://127.0.0.1:9/v1") is not first
    assert _provider("openai:gpt-4.1", "sk-one", "http://127.0.0.1:8/v1") is not first


def test_a_wait_under_a_second_is_said_in_milliseconds_and_never_rounded_down_to_none():
    error = WireError("Slow down", status=429, kind="rate_limit_error")
    error.retry_after = 0.4
    response = error_response("openai", error)
    assert (response["retry-after-ms"], response["Retry-After"]) == ("400", "1")


def test_ten_conversations_are_upstream_at_once_none_waits_for_a_thread(setup, wire, hub):
    """More than the event loop's default pool (CPU count + 4 threads: 6 on 2 cores)."""
    released = threading.Event()
    for n in range(5):
        wire.reply(PATH, json_body=completion(text=f"openai {n}", n=n), hold=released)
        wire.reply("/v1/messages", json_body=test_sessions.anthropic_message(text=f"anthropic {n}", n=n),
                   hold=released)
    gpt, claude = client(hub, setup.openai_key), anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key,
                                                                     max_retries=0)

    def ask(n: int) -> str:
        task = [{"role": "user", "content": f"Task {n}: say hello."}]
        if n % 2:
            return claude.messages.create(model="m", max_tokens=100, messages=task).content[0].text
        return gpt.chat.completions.create(model="m", messages=task).choices[0].message.content

    with ThreadPoolExecutor(10) as pool:
        answers = [pool.submit(ask, n) for n in range(10)]
        try:
            deadline = time.monotonic() + 30
            while len(wire.requests) < 10 and time.monotonic() < deadline:
                time.sleep(0.05)
            upstream_at_once = len(wire.requests)
        finally:
            released.set()
        assert sorted(a.result(timeout=60) for a in answers) == sorted(
            [f"openai {n}" for n in range(5)] + [f"anthropic {n}" for n in range(5)])
    assert upstream_at_once == 10
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 10
