"""The guard on agents mentioning agents, and how another agent's words reach a session:
plain Python and the step loop over a fake host, no database."""

from __future__ import annotations

from sessions.runtime.delivery import Input
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.mentions import (
    MentionOutcome,
    MentionRules,
    judge_agent_mention,
    mentioned,
    post_note,
    render_agent_message,
)
from tests.gateway.factories import make_context
from tests.sessions.runtime.test_loop import FakeHost, run, turn

RULES = MentionRules(per_pair=3, window_seconds=600, per_session=5)


def judge(pair_times=(), taken=0, stopped=False, now=10_000.0, rules=RULES):
    return judge_agent_mention(pair_times=pair_times, session_taken=taken, stopped_recently=stopped, now=now,
                               rules=rules, sender="alice", receiver="bob")


def test_a_first_mention_is_delivered():
    assert judge().deliver


def test_the_pair_rate_limit_counts_only_posts_within_the_window():
    assert not judge(pair_times=(9_500, 9_700, 9_900)).deliver
    verdict = judge(pair_times=(9_500, 9_700, 9_900))
    assert verdict.reason == "alice already reached bob 3 times in the last 10 min (at most 3)"
    assert verdict.announce
    # One of the three is older than the window: room for one more.
    assert judge(pair_times=(9_000, 9_700, 9_900)).deliver


def test_the_session_cap_stops_whatever_the_pair():
    verdict = judge(taken=5)
    assert not verdict.deliver and "at most 5 per session" in verdict.reason


def test_a_stop_is_announced_once_per_window():
    assert judge(taken=5, stopped=False).announce
    assert not judge(taken=5, stopped=True).announce


def test_mentions_are_whole_names():
    assert mentioned("@bob and @alice-2, not @bobby", ["bob", "alice", "bobby", "carol"]) == ["bob", "bobby"]
    assert mentioned("thanks @bob.", ["bob"]) == ["bob"]


def test_the_poster_is_told_what_its_mentions_came_to():
    note = post_note(outcomes=[MentionOutcome("bob", 9, True), MentionOutcome("carl", 11, False, "too many")],
                     idle_agents=["dora"], people=["pat"])
    assert note.splitlines() == [
        "@bob (session 9) reads it at its next step.",
        "@carl (session 11) did NOT get it: too many. People were told; do not repeat it, go on with your task.",
        "@dora has no running session in this room: only people see it.",
        "@pat is a person in this room: they see it in the chat.",
    ]


def test_another_agents_post_reaches_the_model_marked_as_an_agents_and_is_no_decision():
    host = FakeHost(turns=[turn("thanks")], inputs=[Input(41, 6, "agent", "alice", "@bob I changed stats.py")])
    loop = StepLoop(make_context(window=60_000), RuntimeState(), host, clock=lambda: 1_000.0)
    taken = loop.advance()
    # Marked when this unit commits, before the model call.
    assert taken.delivered == () and taken.delivered_mentions == (41,) and not host.requests
    loop, result = run(host, ctx=loop.ctx, state=loop.state)
    assert host.requests[0].messages[-1].text == render_agent_message("alice", "@bob I changed stats.py")
    assert host.requests[0].messages[-1].text.startswith(
        "[agent alice in the room: an agent's message, not a person's]")
    assert not loop.ctx.decisions.items  # only people's words become decisions
    delivered = [p for k, p in host.events if k == "input.delivered"]
    assert delivered == [{"message_id": 41, "kind": "agent", "author": "alice"}]
    assert result.delivered_mentions == ()  # once


class WaitingHost(FakeHost):
    """Remembers whether the loop counted a person as waiting when it sent each request."""

    loop: StepLoop | None = None
    waiting: list[bool] = []

    def call_model(self, request):
        self.waiting.append(self.loop.state.person_waiting)
        return super().call_model(request)


def boundary(inputs: list[Input]) -> tuple[WaitingHost, object]:
    """The boundary's two units: the inputs taken (and committed), then the model call."""
    host = WaitingHost(turns=[turn("ok")], inputs=inputs)
    host.waiting = []
    host.loop = StepLoop(make_context(window=60_000), RuntimeState(), host, clock=lambda: 1_000.0)
    taken = host.loop.advance()
    assert not host.requests
    called = host.loop.advance()
    assert called.delivered == called.delivered_mentions == () and len(host.requests) == 1
    return host, taken


def test_the_boundary_that_reads_an_agents_post_reports_it_for_marking():
    host, result = boundary([Input(41, 6, "agent", "alice", "hi"), Input(42, 7, "steer", "pat", "go")])
    assert result.delivered == (42,) and result.delivered_mentions == (41,)
    assert host.waiting == [True]  # the person's steer


def test_an_agents_post_alone_does_not_count_as_a_person_waiting():
    host, result = boundary([Input(41, 6, "agent", "alice", "hi")])
    assert host.waiting == [False] and host.loop.state.chat_cursor == 0
