"""A stateless client's requests through the endpoint are one real session of the room:
the official OpenAI SDK under a real Daphne, the local wire-protocol server upstream,
PostgreSQL. The session's ledger lists the client's tool results, an unchanged re-read
is a note upstream, a changed history starts a new segment, a steer reaches the next
upstream request, a cancel refuses the next one, an overflow gets one folded retry."""

from __future__ import annotations

import json
from datetime import timedelta

import anthropic
import openai
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import AgentProfile
from endpoint.models import GatewayConversation
from rooms.errors import RoomError
from rooms.services import message_post
from sessions import dispatch
from sessions.models import AgentMention, Observation, ProviderCall, Session, SessionEvent, Task
from sessions.runtime import states
from sessions.services.lifecycle import session_cancel, session_retry
from sessions.services.talk import session_steer
from sessions.sweep import sessions_time_out

pytestmark = pytest.mark.timeout(120)

PATH = "/v1/chat/completions"
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
FILE = "def area(r):\n    return 3.14 * r * r\n" * 40


def completion(*, text: str = "", call: tuple[str, dict] | None = None, n: int = 0, prompt_tokens: int = 100) -> dict:
    message: dict = {"role": "assistant", "content": text or None}
    if call is not None:
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": call[0], "arguments": json.dumps(call[1])}}]
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1760000000, "model": "gpt-4.1",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 7, "total_tokens": prompt_tokens + 7}}


OVERFLOW = {"error": {"message": "This model's maximum context length is 8192 tokens.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


class Agent:
    """A client loop the way mini-swe-agent's is: keeps its own full history, sends it all."""

    def __init__(self, client: openai.OpenAI, task: str, **extra) -> None:
        self.client, self.extra = client, extra
        self.messages: list[dict] = [{"role": "system", "content": "You fix bugs."},
                                     {"role": "user", "content": task}]

    def step(self, **extra):
        answer = self.client.chat.completions.create(model="gpt", messages=self.messages, tools=TOOLS,
                                                     **self.extra, **extra)
        message = answer.choices[0].message
        self.messages.append(message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"}))
        return message

    def result(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})


def client(hub, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=hub.url + "/v1", api_key=key, max_retries=0)


def sent(wire) -> list[dict]:
    return [r.json for r in wire.requests_to(PATH)]


def well_formed(messages: list[dict]) -> None:
    """Every tool message answers a call of the assistant message before it."""
    calls: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            calls = {c["id"] for c in message.get("tool_calls") or ()}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in calls, messages


def test_a_conversation_with_tool_calls_is_one_session_with_its_ledger_and_a_note_for_a_reread(
        setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=2))
    wire.reply(PATH, json_body=completion(text="The bug is the constant.", n=3))
    agent = Agent(client(hub, setup.openai_key), "Fix the area function in geo.py")
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    second = agent.step()
    agent.result(second.tool_calls[0].id, FILE)
    assert agent.step().content == "The bug is the constant."

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.state == states.RUNNING and session.agent.name == "gpt"
    assert session.task.objective == "Fix the area function in geo.py"
    assert GatewayConversation.objects.get().requests == 3
    assert ProviderCall.objects.filter(session=session).count() == 3
    assert session.tokens_input == 300 and session.tokens_output == 21

    upstream = sent(wire)
    assert [m["role"] for m in upstream[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    tool_texts = [m["content"] for m in upstream[2]["messages"] if m["role"] == "tool"]
    assert tool_texts[0] == FILE  # the first read, as the client sent it
    assert tool_texts[1].startswith("[unchanged] geo.py") and "call_1" in tool_texts[1]  # the re-read: a note
    assert agent.messages[-2]["content"] == FILE  # the client's own history is untouched
    well_formed(upstream[2]["messages"])

    reads = Observation.objects.filter(session=session).order_by("seq")
    assert [(o.tool, o.purpose) for o in reads] == [("read_file", 'read_file {"path": "geo.py"}')] * 2
    pages = Client()
    pages.force_login(owner)
    ledger = pages.get(reverse("sessions:ledger", args=[session.pk])).content.decode()
    assert "geo.py" in ledger and "read_file" in ledger
    room = pages.get(reverse("room", args=[setup.room.slug])).content.decode()
    assert f"/sessions/{session.pk}/" in room
    page = pages.get(reverse("sessions:session", args=[session.pk]))
    assert page.status_code == 200 and "Fix the area function" in page.content.decode()


def test_a_history_the_client_changed_starts_a_new_segment_and_the_upstream_request_stays_well_formed(
        setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=2))
    wire.reply(PATH, json_body=completion(text="ok", n=3))
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    second = agent.step()
    agent.result(second.tool_calls[0].id, FILE)
    # The client compacts its history: the first exchange becomes a summary.
    agent.messages[2:4] = [{"role": "user", "content": "Summary: geo.py read once; it computes the area."}]
    agent.step()

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 1
    started = SessionEvent.objects.filter(session=session, kind="segment.started").get()
    assert "changed its history at message 1" in started.payload["reason"]
    last = sent(wire)[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "user", "assistant", "tool"]
    assert last[2]["content"].startswith("Summary:")
    assert last[4]["content"] == FILE  # the old segment's copy left with it: the text, not a note
    well_formed(last)
    assert Observation.objects.filter(session=session).count() == 2
    pages = Client()
    pages.force_login(owner)
    page = pages.get(reverse("sessions:session", args=[session.pk])).content.decode()
    assert "segment 2 starts" in page and "prose from client; 1 result archived" in " ".join(page.split())


def test_a_steer_reaches_the_next_upstream_request_and_a_cancel_refuses_the_one_after(setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "util.py"}), n=2))
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    steer = session_steer(session=session, actor=owner, text="Use math.pi, not 3.14.")
    agent.result(first.tool_calls[0].id, FILE)
    agent.step()

    last = sent(wire)[-1]["messages"]
    assert last[-1]["role"] == "user" and "Use math.pi, not 3.14." in last[-1]["content"]
    assert last[-2]["role"] == "tool"
    steer.refresh_from_db()
    assert steer.delivered_at is not None and steer.session_link.session_id == session.pk
    assert all("math.pi" not in json.dumps(m) for m in agent.messages)  # the client never sees it

    session_cancel(session=session, actor=owner)
    agent.result("call_2", "x = 1\n")
    with pytest.raises(openai.ConflictError) as refused:
        agent.step()
    assert "cancelled in the room" in refused.value.message
    assert len(sent(wire)) == 2  # nothing more went upstream
    with pytest.raises(RoomError):  # a worker here cannot run an agent that runs elsewhere
        session_retry(session=Session.objects.get(pk=session.pk), actor=owner)


def test_chat_that_mentions_the_agent_and_another_agents_post_reach_the_next_request_once(setup, wire, hub, owner):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "util.py"}), n=2))
    wire.reply(PATH, json_body=completion(text="Done.", n=3))
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    message_post(room=setup.room, author=owner, kind="chat", text="@gpt keep the public names")
    message_post(room=setup.room, author=owner, kind="chat", text="@gptx is someone else")
    replayer = AgentProfile.objects.get(name="replayer")
    post = message_post(room=setup.room, author=None, kind="agent", agent=replayer, text="@gpt I renamed util.py")
    agent.result(first.tool_calls[0].id, FILE)
    second = agent.step()

    texts = [json.dumps(m) for m in sent(wire)[1]["messages"]]
    assert sum("keep the public names" in t for t in texts) == 1 and not any("someone else" in t for t in texts)
    assert sum("[agent replayer in the room" in t and "I renamed util.py" in t for t in texts) == 1
    assert AgentMention.objects.get(message=post, session=session).state == AgentMention.State.DELIVERED
    agent.result(second.tool_calls[0].id, "x = 1\n")
    agent.step()
    texts = [json.dumps(m) for m in sent(wire)[2]["messages"]]
    # In the session's context since, not delivered again.
    assert sum("keep the public names" in t for t in texts) == sum("I renamed util.py" in t for t in texts) == 1
    delivered = SessionEvent.objects.filter(session=session, kind="input.delivered")
    assert sorted(e.payload["kind"] for e in delivered) == ["agent", "chat"]


def test_an_upstream_overflow_gets_one_folded_retry_and_a_second_is_the_clients_context_length_error(
        setup, wire, hub):
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "geo.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "util.py"}), n=2))
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    second = agent.step()
    agent.result(second.tool_calls[0].id, "x = 1\n")

    wire.reply(PATH, status=400, json_body=OVERFLOW)
    wire.reply(PATH, json_body=completion(text="Done.", n=3))
    assert agent.step().content == "Done."
    refused, retried = sent(wire)[2:4]
    assert [m["content"] for m in refused["messages"] if m["role"] == "tool"][0] == FILE
    folded = [m["content"] for m in retried["messages"] if m["role"] == "tool"][0]
    assert folded != FILE and len(folded) < len(FILE) // 4  # a receipt in its place
    well_formed(retried["messages"])
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert SessionEvent.objects.filter(session=session, kind="fold").exists()

    agent.messages.append({"role": "user", "content": "And the tests?"})
    for _ in range(3):
        wire.reply(PATH, status=400, json_body=OVERFLOW)
    with pytest.raises(openai.BadRequestError) as overflowed:
        agent.step()
    assert overflowed.value.code == "context_length_exceeded"
    # Nothing left to fold: the retry is in a new segment, as the step loop's would be
    # (its handoff's prose call overflowed too, so the records wrote it); then no more.
    after = sent(wire)[4:]
    assert len(after) == 3 and after[1]["messages"][-1]["role"] == "user"
    assert SessionEvent.objects.filter(session=session, kind="segment.started").exists()
    assert Session.objects.get(pk=session.pk).state == states.RUNNING


def test_no_worker_claims_and_the_sweep_never_times_out_an_endpoint_session(setup):
    agent = AgentProfile.objects.get(name="gpt")
    task = Task.objects.create(room=setup.room, title="t", objective="o")
    long_ago = timezone.now() - timedelta(days=2)
    proxied, own = (Session.objects.create(task=task, agent=agent, origin=origin, state=states.RUNNING,
                                           started_at=long_ago, time_limit_seconds=60, attempt=n)
                    for n, origin in ((1, Session.Origin.ENDPOINT), (2, Session.Origin.HUB)))
    assert dispatch.candidates() == [own.pk]
    assert sessions_time_out(timezone.now()) == 1
    assert Session.objects.get(pk=proxied.pk).state == states.RUNNING
    assert Session.objects.get(pk=own.pk).state == states.TIMED_OUT


def anthropic_message(*, text: str = "", tool: tuple[str, dict] | None = None, n: int = 0) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    if tool is not None:
        content.append({"type": "tool_use", "id": f"toolu_{n}", "name": tool[0], "input": tool[1]})
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": content,
            "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 9}}


def test_the_anthropic_sdk_streaming_with_a_session_header_is_one_session_of_its_own(setup, wire, hub):
    claude = anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0,
                                 default_headers={"X-Atrium-Session": "run-42"})
    tools = [{"name": "view", "description": "Show a file.",
              "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
    wire.reply("/v1/messages", json_body=anthropic_message(tool=("view", {"path": "geo.py", "view_range": [1, 20]}),
                                                          n=1))
    wire.reply("/v1/messages", json_body=anthropic_message(text="Looks right.", n=2))
    history: list[dict] = [{"role": "user", "content": "Check geo.py"}]
    with claude.messages.stream(model="c", max_tokens=1000, messages=history, tools=tools) as stream:
        first = stream.get_final_message()
    call = next(b for b in first.content if b.type == "tool_use")
    history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": FILE}]}]
    with claude.messages.stream(model="c", max_tokens=1000, messages=history, tools=tools) as stream:
        assert stream.get_final_message().content[0].text == "Looks right."

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert GatewayConversation.objects.get(session=session).conversation == f"h:{session.gateway_conversation.key_id}:run-42"
    read = Observation.objects.get(session=session)
    assert (read.tool, read.path, read.line_start, read.line_end) == ("view", "geo.py", 1, 20)
    upstream = wire.requests_to("/v1/messages")[-1].json
    assert upstream["max_tokens"] == 1000 and upstream["model"] == "claude-sonnet-5"
    assert upstream["messages"][-1]["content"][0]["type"] == "tool_result"


