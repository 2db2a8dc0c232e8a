"""The peers (peers.py): each replayed as its system does it, on the whole history,
with its own summary calls billed."""

from __future__ import annotations

import pytest

from observations.gateway.messages import Message, ToolCall
from observations.gateway.tokens import estimate_message_tokens, estimate_tokens
from observations.gateway.transcript import FileRange, Observation, ObservationInput
from observations.replay.eval.engine import replay
from observations.replay.eval.peers import (
    CLEARED,
    PEERS,
    AutoCompact,
    ClearToolUses,
    Item,
    SummarizingCondenser,
)
from observations.replay.trajectory import Step
from tests.replay.test_evaluate_factories import file_text, read_event, trajectory


def result(obs_id: int, text: str, *, read: str | None = None, written: tuple[str, ...] = ()) -> Item:
    source = ObservationInput(call_id=f"c{obs_id}", tool="bash", arguments={}, text=text, sha256=f"{obs_id:064x}",
                              size=len(text), tokens=estimate_tokens(text),
                              read=FileRange(read) if read else None, written=written)
    message = Message("tool", text, tool_call_id=f"c{obs_id}", tool_name="bash")
    return Item(message, estimate_message_tokens(text), Observation(obs_id, obs_id, source))


def turn(n: int, calls: int = 1) -> Item:
    message = Message("assistant", f"step {n}", tuple(ToolCall(f"c{n}-{k}", "bash", {}) for k in range(calls)))
    return Item(message, estimate_message_tokens(message.text))


def history(results: int, lines: int = 40) -> list[Item]:
    items = [Item(Message("user", "Fix the loader."), 10)]
    for n in range(results):
        items += [turn(n), result(n, file_text(f"src/f{n}.py", lines))]
    return items


def tokens(items: list[Item]) -> int:
    return sum(i.tokens for i in items)


def test_clearing_keeps_the_newest_three_results_once_the_request_passes_the_trigger():
    items = history(12)
    below = ClearToolUses("anthropic-clear", 1_000_000, trigger=tokens(items) + 1)
    assert below.request(items, 0) == (items, None)

    peer = ClearToolUses("anthropic-clear", 1_000_000, trigger=tokens(items) - 1)
    view, summary = peer.request(items, 0)
    assert summary is None and len(view) == len(items)
    texts = [i.message.text for i in view if i.message.role == "tool"]
    assert texts[:9] == [CLEARED] * 9 and CLEARED not in texts[9:]
    assert peer.gone(items[2].observation) and not peer.gone(items[-1].observation)
    # Applied to the whole history each time: the next request clears one result more.
    more = [*items, turn(12), result(12, file_text("src/f12.py", 40))]
    assert [i.message.text for i in peer.request(more, 0)[0] if i.message.role == "tool"].count(CLEARED) == 10


def test_below_125k_the_trigger_is_the_same_share_of_the_window_and_clear_at_least_can_hold_it_back():
    assert ClearToolUses("c", 200_000).trigger == 100_000
    assert ClearToolUses("c", 32_000).trigger == 25_600
    items = history(6)
    small = ClearToolUses("c", 1_000_000, trigger=100, clear_at_least=1_000.0)  # must clear 100,000
    assert CLEARED not in [i.message.text for i in small.request(items, 0)[0]]


def test_the_condenser_keeps_its_head_and_newest_events_and_summarizes_the_rest_with_a_prompt_of_its_own():
    peer = SummarizingCondenser("openhands-condenser", max_size=20, keep_first=4)
    items = history(12)  # 1 + 24 events, and the system prompt
    view, summary = peer.request(items, 500)
    assert summary is not None and summary.own_header == 0  # reads nothing cached
    assert view[:3] == items[:3] and view[3].message.text.startswith("[summary of the events before]")
    tail = view[4:]
    assert sum(i.events for i in tail) <= 20 // 2 - 4 - 1 and tail[0].message.role == "assistant"
    assert tail == items[-len(tail):]
    forgotten = items[3: len(items) - len(tail)]
    assert summary.tokens == (tokens(forgotten) + SummarizingCondenser.PROMPT_TOKENS,)
    assert view[3].tokens <= tokens(forgotten) // 2
    assert peer.gone(forgotten[1].observation) and not peer.gone(items[-1].observation)
    # Until the view passes max_size again, the history only grows after the summary.
    grown = [*items, turn(12), result(12, "ok")]
    assert peer.request(grown, 500) == ([*view, *grown[-2:]], None)


def test_an_assistant_turn_of_several_calls_is_as_many_events():
    assert turn(1, calls=3).events == 3 and turn(1, calls=0).events == 1


def test_auto_compaction_sends_the_conversation_with_an_instruction_then_keeps_the_task_and_summary():
    items = history(10)
    peer = AutoCompact("auto-compact-codex", threshold=tokens(items) - 1, summary_tokens=300, prompt_tokens=200)
    view, summary = peer.request(items, 0)
    assert summary is not None and summary.own_header is None  # the agent's own prefix: read from the cache
    assert summary.messages[:-1] == tuple(i.message for i in items) and summary.tokens[-1] == 200
    assert summary.output_tokens == 300
    assert view[0] == items[0] and len(view) == 2 and view[1].tokens <= 300
    assert all(peer.gone(i.observation) for i in items if i.observation is not None)


def test_claude_codes_compaction_reads_again_the_files_the_agent_changed():
    items = history(3)
    items += [result(10, file_text("src/app.py", 30), read="src/app.py"),
              result(11, file_text("src/big.py", 900), read="src/big.py"),
              result(12, "edited", written=("src/app.py", "src/big.py"))]
    peer = AutoCompact("auto-compact-claude-code", threshold=100, summary_tokens=300, prompt_tokens=200,
                       restore_files=5, file_tokens=5_000)
    view, _ = peer.request(items, 0)
    restored = view[2:]
    assert [i.message.text for i in restored][0] == items[-3].message.text  # src/app.py, newest read
    assert restored[1].message.text == "[file src/big.py was changed; read it again to see it]"
    assert not peer.gone(items[-3].observation) and peer.gone(items[-2].observation)


@pytest.mark.parametrize("name", list(PEERS))
def test_every_peer_replays_and_bills_its_summaries_as_requests(name):
    # 70 steps: past the condenser's 120 events, and past every threshold at 16k.
    reads = trajectory([read_event(f"r{n}", f"src/f{n}.py", file_text(f"src/f{n}.py", 60)) for n in range(70)])
    run = replay(reads, name, 16_000)
    base = replay(reads, "none", 16_000)
    assert not run.failed and run.folds
    summaries = run.requests - base.requests
    assert summaries == (0 if name.startswith("anthropic") else len(run.folds))
    assert run.output_tokens > base.output_tokens if summaries else run.output_tokens == base.output_tokens
    assert sum(run.sent) < sum(base.sent)
    # Strict accounting: the request after a peer changed the history is written whole.
    assert run.input_cost_full_write > run.input_cost


def calls_answered(view: list[Item]) -> bool:
    """Every tool result in the request follows the assistant message that called it."""
    called: set[str] = set()
    for item in view:
        called |= {c.id for c in item.message.tool_calls}
        if item.message.role == "tool" and item.message.tool_call_id not in called:
            return False
    return True


def test_a_compaction_on_a_step_with_a_dropped_exchange_keeps_every_later_message(monkeypatch):
    events = [read_event(f"r{n}", f"src/f{n}.py", file_text(f"src/f{n}.py", 60)) for n in range(12)]
    steps = [Step(index=n, assistant_text=f"THOUGHT: step {n}", events=(e,)) for n, e in enumerate(events)]
    # Step 6 is a format error the agent drops: it rides along with step 7's request only.
    steps[6] = Step(index=6, assistant_text="no action here", notice="Please give one action.", kept_in_history=False)
    sizes = replay(trajectory([], steps=steps), "none", 8_000).sent
    for compact_at in range(5, 10):  # the dropped exchange rides with request 7
        compact = AutoCompact("c", threshold=sizes[compact_at] - 1, summary_tokens=200, prompt_tokens=50)
        seen = []

        def request(history, header, compact=compact, seen=seen):
            view, summary = AutoCompact.request(compact, history, header)
            seen.append((list(history), view))
            return view, summary

        monkeypatch.setattr(compact, "request", request)
        monkeypatch.setitem(PEERS, "auto-compact-codex", lambda budget, compact=compact: compact)
        run = replay(trajectory([], steps=steps), "auto-compact-codex", 8_000)
        assert not run.failed and run.folds
        assert all("no action here" not in [i.message.text for i in history] for history, _ in seen)
        assert all(calls_answered(view) for _, view in seen)


def test_the_condensers_head_never_ends_between_a_call_and_its_results():
    items = [Item(Message("user", "Fix it."), 10), turn(0, calls=2),
             result(100, file_text("a.py", 30)), result(101, file_text("b.py", 30))]
    for n in range(1, 12):
        items += [turn(n), result(n, file_text(f"src/f{n}.py", 40))]
    peer = SummarizingCondenser("openhands-condenser", max_size=20, keep_first=4)
    view, summary = peer.request(items, 0)
    assert summary is not None
    assert view[:4] == items[:4] and view[4].message.text.startswith("[summary")
    assert not peer.gone(items[3].observation)
