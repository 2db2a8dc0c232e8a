"""A gateway session's context kept in memory between its requests (endpoint/hot.py)
sends upstream exactly what a context restored from the saved state sends, and is left
alone when the saved state moved on without it. In process (``proxied_turn``), against
the local wire-protocol server, PostgreSQL or SQLite with real commits."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from endpoint import sessions as endpoint_sessions
from endpoint.conversation import message_digests
from endpoint.formats import FORMATS
from endpoint.hot import CONTEXTS, Kept, KeptContexts, KeptHistories
from endpoint.models import GatewayConversation, GatewayKey
from endpoint.sessions import proxied_turn
from observations.calibration import calibration_forget
from observations.gateway.journal import StateJournal
from observations.gateway.messages import Message, ToolCall
from observations.models import Calibration
from sessions.models import Fold
from tests.endpoint.conftest import owner, setup, wire  # noqa: F401
from tests.endpoint.test_sessions import FILE, TOOLS, completion

pytestmark = pytest.mark.timeout(300)

STEPS = 40


def _run(wire, conversation: str, *, cold: bool, stale_at: int | None = None) -> list[dict]:  # noqa: F811
    """A client's conversation of STEPS requests, each a tool result more, its system
    prompt changed at step 15 and its output limit at step 25; the upstream's bodies.
    ``cold``: no context kept between requests; ``stale_at``: the context kept after
    that request is put back after the next one, as another process's would be."""
    key = GatewayKey.objects.get(agent__name="gpt")
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    first = len(wire.requests_to("/v1/chat/completions"))
    stale: tuple = ()
    for n in range(STEPS):
        wire.reply("/v1/chat/completions", json_body=completion(
            text=f"Step {n}.", call=("read_file", {"path": f"src/m{n % 9}.py"}), n=n, prompt_tokens=900 + 450 * n))
        if n == 15:
            messages[0] = {"role": "system", "content": "You fix bugs. Keep the tests passing."}
        body = {"model": "m", "messages": messages, "tools": TOOLS, **({"max_tokens": 3000} if n >= 25 else {})}
        if cold:
            CONTEXTS.clear()
        if stale_at is not None and n == stale_at + 2:
            CONTEXTS.keep(*stale)  # over the one request stale_at + 1 kept
        turn = proxied_turn(key=key, conversation=conversation, request=FORMATS["openai"].request(body, "gpt-4.1"))
        if n == stale_at:
            session_id = GatewayConversation.objects.get(conversation=conversation).session_id
            stale = (session_id, CONTEXTS.take(session_id))
            assert stale[1] is not None
        call = turn.tool_calls[0]
        messages += [{"role": "assistant", "content": turn.text, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
            {"role": "tool", "tool_call_id": call.id, "content": f"{FILE}# {n}\n"}]
    return [r.json for r in wire.requests_to("/v1/chat/completions")[first:]]


def _fresh_calibration() -> None:
    """Each run learns the model's calibration from nothing, as the first did."""
    Calibration.objects.all().delete()
    calibration_forget()


@pytest.fixture
def restores(monkeypatch) -> list[int]:
    """Each restore of a context from its saved state (its step)."""
    made: list[int] = []

    def load_state(*args, **kwargs):
        ctx = real(*args, **kwargs)
        made.append(ctx.step)
        return ctx

    real = endpoint_sessions.load_state
    monkeypatch.setattr(endpoint_sessions, "load_state", load_state)
    return made


def test_a_kept_context_sends_what_a_restored_one_sends(setup, wire, restores):  # noqa: F811
    kept = _run(wire, "h:kept", cold=False)
    assert len(CONTEXTS) == 1 and restores == []
    _fresh_calibration()
    restored = _run(wire, "h:restored", cold=True)
    assert len(restores) == STEPS - 1
    assert Fold.objects.filter(session__gateway_conversation__conversation="h:kept").exists()  # folds happened
    assert kept == restored


def test_a_kept_context_the_saved_state_moved_past_is_not_used(setup, wire, restores):  # noqa: F811
    restored = _run(wire, "h:restored", cold=True)
    _fresh_calibration()
    restores.clear()
    # The context kept after request 10 comes back after request 11 was served without it.
    moved_on = _run(wire, "h:moved-on", cold=False, stale_at=10)
    assert len(restores) == 2  # request 11: nothing kept; request 12: what was kept is behind
    assert moved_on == restored


def test_a_process_keeps_the_newest_contexts_within_a_count_and_a_size():
    def kept(tokens: int) -> Kept:
        return Kept(SimpleNamespace(transcript=SimpleNamespace(estimate=tokens)), StateJournal(), "m", "on_demand")

    contexts = KeptContexts(size=3, tokens=1_000)
    for session_id in range(4):
        contexts.keep(session_id, kept(100))
    assert len(contexts) == 3 and contexts.take(0) is None  # the least recently used left
    contexts.keep(1, kept(900))  # the same session again: replaced, and over the size
    assert contexts.take(2) is None and contexts.take(3).tokens == 100 and contexts.take(1).tokens == 900
    assert len(contexts) == 0
    contexts.keep(5, kept(5_000))  # one larger than the whole budget is not kept
    assert contexts.take(5) is None


def test_a_conversations_last_history_gives_its_digests_to_the_next_and_few_are_kept():
    histories = KeptHistories(size=2, chars=1_000)
    first = [Message("user", "fix it"), Message("assistant", "done")]
    histories.carry((1, "a"), first)
    assert [m._digest for m in first] == [None, None]  # nothing kept before it
    message_digests(first)
    resent = [replace(m) for m in first] + [Message("user", "again")]
    histories.carry((1, "a"), resent)
    assert [m._digest for m in resent] == [first[0]._digest, first[1]._digest, None]
    message_digests(resent)
    histories.carry((1, "b"), [Message("user", "b")])
    histories.carry((1, "c"), [Message("user", "c")])  # a third: the least recently seen leaves
    again = [replace(m) for m in resent]
    histories.carry((1, "a"), again)
    assert [m._digest for m in again] == [None, None, None]


def _digested(text: str, **fields) -> list[Message]:
    messages = [Message("user", text, **fields)]
    message_digests(messages)
    return messages


def test_the_histories_kept_hold_at_most_so_many_characters_arguments_and_thinking_included():
    histories = KeptHistories(size=10, chars=110)
    histories.carry("a", _digested("a" * 40))
    written = ToolCall("w", "write_file", {"path": "f.py", "content": ["x" * 30, {"y": "y" * 10}]})
    b = _digested("", tool_calls=(written,), thinking=("t" * 10,))  # 10 + 4+4 + 7+30 + 1+10 = 66
    histories.carry("b", b)  # 106 kept
    histories.carry("c", c := _digested("c" * 10))  # 116: the least recently seen, a, leaves
    histories.carry("a", again := [Message("user", "a" * 40)])  # and b leaves for it
    assert again[0]._digest is None
    histories.carry("z", _digested("z" * 111))  # more than all kept may be: not kept, nothing leaves for it
    histories.carry("z", fresh := [Message("user", "z" * 111)])
    assert fresh[0]._digest is None
    histories.carry("c", resent := [replace(c[0])])
    assert resent[0]._digest == c[0]._digest


def test_arguments_nested_deeper_than_python_recurses_are_hashed_not_carried():
    deep: dict = {}
    for _ in range(5_000):
        deep = {"p": deep}
    held = [Message("assistant", "", tool_calls=(ToolCall("c", "read", deep),))]
    object.__setattr__(held[0], "_digest", b"digest")
    resent = [Message("assistant", "", tool_calls=(ToolCall("c", "read", deep),))]
    KeptHistories().carry("deep", held)
    histories = KeptHistories()
    histories.carry("deep", held)
    histories.carry("deep", resent)
    assert resent[0]._digest is None
