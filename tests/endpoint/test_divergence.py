"""Conversations that never break (issue 26, point 5): whatever a client does to its
history, the next request is served, never a 500; and two runs that start alike are
two sessions, never one session pulled back and forth. The official SDKs under a real
Daphne, the local wire-protocol server upstream, the hub's database."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from endpoint.models import GatewayConversation
from sessions.models import Observation, Session, SessionEvent
from tests.endpoint.test_sessions import (
    FILE,
    PATH,
    Agent,
    anthropic_message,
    client,
    completion,
    sent,
    well_formed,
)

pytestmark = pytest.mark.timeout(120)


def segments_started(session: Session) -> int:
    return SessionEvent.objects.filter(session=session, kind="segment.started").count()


def test_an_edited_tool_result_whose_call_is_kept_starts_a_segment_and_the_session_goes_on(setup, wire, hub):
    """It was a 500 on every retry: the history fed again held the call's result twice."""
    for n, reply in enumerate([("read_file", {"path": "geo.py"}), ("read_file", {"path": "geo.py"}), None, None], 1):
        wire.reply(PATH, json_body=completion(call=reply, n=n) if reply else completion(text=f"answer {n}", n=n))
    agent = Agent(client(hub, setup.openai_key), "Fix geo.py")
    first = agent.step()
    agent.result(first.tool_calls[0].id, FILE)
    second = agent.step()
    agent.result(second.tool_calls[0].id, FILE)
    agent.messages[3]["content"] = "[output trimmed by the client]"
    assert agent.step().content == "answer 3"
    agent.messages.append({"role": "user", "content": "And the tests?"})
    assert agent.step().content == "answer 4"

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert segments_started(session) == 1  # the edit; the question after it continues the new segment
    after_edit = sent(wire)[2]["messages"]
    well_formed(after_edit)
    assert after_edit[3] == {"role": "tool", "tool_call_id": "call_1", "content": "[output trimmed by the client]"}
    # Both copies of call_1's result are on the ledger: the first archived with its segment.
    assert list(Observation.objects.filter(session=session, call_id="call_1").values_list("segment", flat=True)) \
        == [1, 2]


def test_a_model_server_that_repeats_its_call_ids_is_served(setup, wire, hub):
    for n in (1, 2):
        answer = completion(call=("read_file", {"path": f"f{n}.py"}), n=n)
        answer["choices"][0]["message"]["tool_calls"][0]["id"] = "call_0"
        wire.reply(PATH, json_body=answer)
    wire.reply(PATH, json_body=completion(text="done", n=3))
    agent = Agent(client(hub, setup.openai_key), "Read both files")
    for n in (1, 2):
        agent.result(agent.step().tool_calls[0].id, f"text of f{n}.py\n")
    assert agent.step().content == "done"
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert list(Observation.objects.filter(session=session).values_list("call_id", "path")) \
        == [("call_0", "f1.py"), ("call_0", "f2.py")]


@pytest.mark.parametrize("order", ["interleaved", "one after the other"])
def test_two_runs_of_one_task_are_two_sessions_each_with_its_own_history(setup, wire, hub, order):
    """Same key, same task, same tools: the runs differ only by what the upstream answered
    each. Before, they shared one session and each request of one started a new segment
    over the other's history."""
    for n in range(1, 7):
        reply = completion(call=("read_file", {"path": f"file{n}.py"}), n=n) if n <= 4 else completion(text="ok", n=n)
        wire.reply(PATH, json_body=reply)
    runs = [Agent(client(hub, setup.openai_key), "Fix the failing test") for _ in range(2)]
    sent_length = [0, 0]

    def step(index: int) -> None:
        run = runs[index]
        sent_length[index] = len(run.messages)
        message = run.step()
        for call in message.tool_calls or ():
            run.result(call.id, f"contents of {call.function.arguments}\n")

    def reads_sent(index: int) -> set[str]:
        history = runs[index].messages[:sent_length[index]]
        return {json.loads(call["function"]["arguments"])["path"]
                for message in history for call in message.get("tool_calls") or ()
                if any(m.get("tool_call_id") == call["id"] for m in history)}

    schedule = [0, 1, 0, 1, 0, 1] if order == "interleaved" else [0, 0, 0, 1, 1, 1]
    for index in schedule:
        step(index)

    sessions = list(Session.objects.filter(origin=Session.Origin.ENDPOINT).order_by("pk"))
    assert len(sessions) == 2 and GatewayConversation.objects.count() == 2
    assert [segments_started(s) for s in sessions] == [0, 0]
    for request in sent(wire):
        well_formed(request["messages"])
    # Each session's ledger holds its own run's reads and nothing of the other's.
    ledgers = [set(Observation.objects.filter(session=s).values_list("path", flat=True)) for s in sessions]
    reads = [reads_sent(0), reads_sent(1)]
    assert sorted(ledgers, key=sorted) == sorted(reads, key=sorted) and not reads[0] & reads[1]
    # The last upstream request of each run is that run's history, whole.
    last = dict(zip(schedule, sent(wire), strict=True))
    assert [len(last[index]["messages"]) for index in (0, 1)] == sent_length


def test_chats_that_share_their_worked_examples_are_sessions_of_their_own_named_by_what_was_asked(setup, wire, hub):
    """aider starts every chat with the same worked example: the first user message never
    told two chats apart."""
    examples = [{"role": "system", "content": "Act as an expert software developer."},
                {"role": "user", "content": "Change get_factorial() to use math.factorial"},
                {"role": "assistant", "content": "To make this change we need to modify `mathweb/flask/app.py`."}]
    for n, question in enumerate(["Rename the area function", "Add a test for perimeter"], 1):
        wire.reply(PATH, json_body=completion(text=f"done {n}", n=n))
        gateway = client(hub, setup.openai_key)
        gateway.chat.completions.create(model="m", messages=[*examples, {"role": "user", "content": question}])
    objectives = sorted(Session.objects.filter(origin=Session.Origin.ENDPOINT).values_list("task__objective",
                                                                                             flat=True))
    assert objectives == ["Add a test for perimeter", "Rename the area function"]
    assert SessionEvent.objects.filter(kind="segment.started").count() == 0


@pytest.mark.parametrize("user_id", [
    lambda sid: json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": sid}),
    lambda sid: f"user_{'a' * 64}_account__session_{sid}",
], ids=["2.1.78 and later", "before 2.1.78"])
def test_claude_codes_session_id_names_its_conversation_and_a_compaction_stays_in_it(setup, wire, hub, user_id):
    """Two Claude Code sessions on the same task are two sessions; one that compacts its
    history (the whole of it becomes a summary) goes on in a new segment of its own."""
    claude = anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0)
    for n in range(1, 4):
        wire.reply("/v1/messages", json_body=anthropic_message(text=f"reply {n}", n=n))
    ids = ["2f1c1f0e-8a77-4cde-9d5b-0b7e2f6a1111", "7d3e9a52-1b4c-4f0e-a6d2-93c8e2b02222"]
    task = [{"role": "user", "content": "Fix the failing test"}]
    for sid in ids:
        claude.messages.create(model="c", max_tokens=500, messages=task, metadata={"user_id": user_id(sid)})
    compacted = [{"role": "user", "content": "This session continues an earlier one. Summary: tests fail in geo."}]
    claude.messages.create(model="c", max_tokens=500, messages=compacted, metadata={"user_id": user_id(ids[0])})

    names = list(GatewayConversation.objects.values_list("conversation", flat=True))
    assert len(names) == 2 and all(name.startswith("c:") for name in names)
    first = GatewayConversation.objects.get(requests=2)
    assert segments_started(first.session) == 1
    assert wire.requests_to("/v1/messages")[-1].json["messages"][0]["content"][0]["text"] == compacted[0]["content"]


def test_claude_codes_session_header_names_its_conversation(setup, wire, hub):
    claude = anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0)
    for n in (1, 2):
        wire.reply("/v1/messages", json_body=anthropic_message(text=f"reply {n}", n=n))
    for sid in ("aaaa-1", "bbbb-2"):
        claude.messages.create(model="c", max_tokens=500, messages=[{"role": "user", "content": "Same task"}],
                               extra_headers={"X-Claude-Code-Session-Id": sid})
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 2


def test_claude_codes_side_requests_under_its_session_id_leave_the_main_conversation_alone(setup, wire, hub):
    """Titles and subagents come with the same session id and a system prompt of their own."""
    claude = anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0,
                                 default_headers={"X-Claude-Code-Session-Id": "0d9f-main"})
    for n in range(1, 4):
        wire.reply("/v1/messages", json_body=anthropic_message(text=f"reply {n}", n=n))
    main = [{"role": "user", "content": "Fix the failing test"}]
    first = claude.messages.create(model="c", max_tokens=500, system="You are Claude Code.", messages=main)
    claude.messages.create(model="c", max_tokens=50, system="Write a 5-word title for this conversation.",
                           messages=[{"role": "user", "content": "Fix the failing test"}])
    main += [{"role": "assistant", "content": first.content[0].text}, {"role": "user", "content": "Go on."}]
    claude.messages.create(model="c", max_tokens=500, system="You are Claude Code.", messages=main)
    assert GatewayConversation.objects.count() == 2
    assert SessionEvent.objects.filter(kind="segment.started").count() == 0


def test_a_twins_first_request_retried_after_a_failure_is_one_session_not_one_per_try(setup, wire, hub):
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "a.py"}), n=1))
    wire.reply(PATH, json_body=completion(call=("read_file", {"path": "b.py"}), n=2))
    first = Agent(client(hub, setup.openai_key), "Fix the failing test")
    first.result(first.step().tool_calls[0].id, "text of a.py\n")
    first.step()
    # Another run of the same task: its first request fails upstream, then is retried twice.
    wire.reply(PATH, status=500, json_body={"error": {"message": "overloaded", "type": "server_error"}})
    wire.reply(PATH, status=500, json_body={"error": {"message": "overloaded", "type": "server_error"}})
    wire.reply(PATH, json_body=completion(text="hello", n=3))
    twin = Agent(client(hub, setup.openai_key), "Fix the failing test")
    for _ in range(2):
        with pytest.raises(openai.APIStatusError):
            twin.step()
    assert twin.step().content == "hello"
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 2
