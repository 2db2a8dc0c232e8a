"""What a stateless client's request feeds its session and what goes upstream: plain
Python over a SessionContext, no database."""

from __future__ import annotations

import pytest

from agents.providers import CallRecord, Completion, ContextOverflow
from endpoint.conversation import message_digests
from endpoint.feed import Exchange, line_range, observation_input, take
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.messages import Message, ModelTurn, Params, Request, ToolCall
from observations.gateway.transcript import ObsState

FILE = "line of the file\n" * 400


def ctx() -> SessionContext:
    return SessionContext(model="openai:m", system_prompt="You fix bugs.", tools=(),
                          budget=Budget(window=128_000, output_budget=4_000))


def request(*messages: Message) -> Request:
    return Request(model="m", system="You fix bugs.", tools=(), messages=messages, max_tokens=0)


def read(n: int, path: str = "geo.py") -> tuple[Message, Message]:
    call = ToolCall(f"call_{n}", "read_file", {"path": path})
    return Message("assistant", "", tool_calls=(call,)), Message("tool", FILE, tool_call_id=call.id)


def tool_texts(req: Request) -> list[str]:
    return [m.text for m in req.messages if m.role == "tool"]


def test_only_what_is_new_is_fed_and_an_unchanged_reread_goes_upstream_as_a_note():
    session = ctx()
    first = request(Message("user", "Fix geo.py"))
    assert take(session, [], first).fed == 1
    second = request(*first.messages, *read(1))
    taken = take(session, message_digests(first.messages), second)
    assert (taken.fed, taken.diverged_at, len(taken.observations)) == (2, None, 1)
    third = request(*second.messages, *read(2))
    take(session, message_digests(second.messages), third)
    sent = session.prepare().request
    assert [m.role for m in sent.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert tool_texts(sent)[0] == FILE
    assert tool_texts(sent)[1].startswith("[unchanged] geo.py")
    assert [o.source.purpose for o in session.observations] == ['read_file {"path": "geo.py"}'] * 2


def test_a_changed_history_starts_a_new_segment_with_the_history_as_it_now_is():
    session = ctx()
    one = request(Message("user", "Fix geo.py"), *read(1))
    take(session, [], one)
    compacted = request(Message("user", "Fix geo.py"), Message("user", "Summary: read geo.py."), *read(2))
    taken = take(session, message_digests(one.messages), compacted)
    assert taken.diverged_at == 1 and taken.fed == 4 and taken.closed is not None and taken.closed[0] == 1
    assert session.segment == 2 and session.obs_base == 1
    sent = session.prepare().request
    assert [m.role for m in sent.messages] == ["user", "user", "assistant", "tool"]
    assert tool_texts(sent) == [FILE]  # the old copy left with its segment: the text, not a note


def test_a_reads_path_and_lines_come_from_its_arguments_and_a_write_is_a_write():
    read_ = observation_input(ToolCall("c", "view", {"path": "a.py", "view_range": [3, -1]}), "x\n")
    assert (read_.read.path, read_.read.start, read_.read.end) == ("a.py", 3, None)
    assert line_range({"offset": 10, "limit": 5}) == (10, 14)
    assert line_range({"start_line": 2, "end_line": 9}) == (2, 9)
    write = observation_input(ToolCall("c", "edit_file", {"file_path": "a.py", "new": "y"}), "ok")
    assert write.read is None and write.written == ("a.py",)
    failed = observation_input(ToolCall("c", "read_file", {"path": "a.py"}), "Error: no such file")
    assert failed.read is None
    shell = observation_input(ToolCall("c", "bash", {"command": "ls " + "x" * 500}), "a.py")
    assert shell.read is None and len(shell.purpose) < 220



def test_an_editor_call_is_read_or_written_by_its_command_not_by_the_tools_name():
    """``str_replace_editor`` (SWE-agent, OpenHands) and Anthropic's text editor say by
    their ``command`` what a call did; by name alone every view of theirs was a write."""
    def editor(text: str, **arguments):
        return observation_input(ToolCall("c", "str_replace_editor", arguments), text)

    view = editor("    10\tdef area(r):\n    11\t    return r\n", command="view", path="/testbed/geo.py",
                  view_range=[10, 11])
    assert (view.read.path, view.read.start, view.read.end) == ("/testbed/geo.py", 10, 11) and view.written == ()
    listing = editor("Here's the files and directories up to 2 levels deep in /testbed, excluding hidden items:\n"
                     "/testbed\n/testbed/geo.py\n", command="view", path="/testbed")
    assert listing.read is None and listing.written == ()
    clipped = editor("     1\ta\n     2\tb\n     3\tc<response clipped><NOTE>...</NOTE>", command="view",
                     path="/testbed/big.py")
    assert (clipped.read.start, clipped.read.end) == (1, 2)  # line 3 may have been cut
    created = editor("File created successfully at: /testbed/t.py", command="create", path="/testbed/t.py",
                     file_text="x = 1\n")
    assert created.read is None and created.written == ("/testbed/t.py",)
    refused = editor("ERROR:\nNo replacement was performed, old_str `y` did not appear verbatim.",
                     command="str_replace", path="/testbed/geo.py", old_str="y", new_str="z")
    assert refused.read is None and refused.written == ()


class Upstream:
    """The provider, scripted: an overflow or a turn per call."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.sent: list[Request] = []
        self.events: list[str] = []

    def call_model(self, req: Request, on_delta: object = None) -> Completion:
        self.sent.append(req)
        answer = self.answers.pop(0)
        record = CallRecord(model="openai:m", requested_model="openai:m", prefix_hash="", input_tokens=10,
                            usage_reported=answer != "overflow")
        if answer == "overflow":
            exc = ContextOverflow("too long", spec="openai:m", status=400)
            exc.record = record
            raise exc
        return Completion(ModelTurn(answer), record)

    def emit(self, kind: str, payload: dict) -> None:
        self.events.append(kind)


def conversation() -> SessionContext:
    session = ctx()
    take(session, [], request(Message("user", "Fix geo.py"), *read(1), *read(2, "util.py")))
    return session


def test_an_overflow_gets_one_folded_retry():
    session, upstream = conversation(), Upstream("overflow", "done")
    exchange = Exchange(session, upstream, max_tokens=500)
    assert exchange.run().turn.text == "done"
    refused, retried = upstream.sent
    assert tool_texts(refused)[0] == FILE and tool_texts(retried)[0] != FILE
    assert session.observations[0].state is ObsState.RECEIPTED
    assert retried.max_tokens == 500
    assert len(exchange.records) == 2 and "fold" in upstream.events


def test_a_second_overflow_is_raised_with_every_call_recorded():
    session, upstream = conversation(), Upstream("overflow", "overflow")
    exchange = Exchange(session, upstream)
    with pytest.raises(ContextOverflow):
        exchange.run()
    assert len(upstream.sent) == 2 and len(exchange.records) == 2


def test_the_clients_settings_go_with_the_step_and_its_limit_stays_within_the_agents_output_budget():
    settings = Params(stop=("END",), temperature=0.1)
    for asked, sent in ((100_000, 4_000), (500, 500), (0, 4_000)):
        session, upstream = conversation(), Upstream("overflow", "done")
        Exchange(session, upstream, max_tokens=asked, params=settings).run()
        # The folded retry too: the budget reserved 4,000 of the window for the reply.
        assert [(r.max_tokens, r.params) for r in upstream.sent] == [(sent, settings)] * 2
