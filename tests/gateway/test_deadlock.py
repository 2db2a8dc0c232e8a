"""The eviction deadlock of ARCHITECTURE.md, reproduced and shown impossible.

The old gateway evicted every tool result older than a few calls ("eager") and
answered reads from a room-wide "already read" set. An agent that needed a file
again got a receipt for text it no longer had, every time it asked (that rule lives on
only in the replay's baselines: tests/replay/test_baselines.py).
"""

from __future__ import annotations

from observations.gateway.economics import CacheEconomics
from observations.gateway.transcript import ObsState
from tests.gateway.factories import call, file_text, make_context, read_input

CONFIG = file_text("src/config.py", 1, 120)


def agent_rereads_config(ctx, *, attempts: int) -> list[str]:
    """Read config, read four other files, then keep asking for config again."""
    ctx.add_user("Fix the config loader.", kind="task")
    answers = []
    reads = [("src/config.py", CONFIG)] + [(f"src/other{n}.py", file_text(f"src/other{n}.py", 1, 120)) for n in range(4)]
    reads += [("src/config.py", CONFIG)] * attempts
    for n, (path, text) in enumerate(reads):
        ctx.prepare()
        ctx.add_assistant(f"reading {path}", (call(f"c{n}", path=path),))
        obs = ctx.add_tool_result(read_input(f"c{n}", path, text))
        if n >= 5:
            answers.append(ctx.transcript.messages[obs.entry_index].text)
    ctx.prepare()
    return answers


def test_on_demand_with_the_session_ledger_serves_the_text():
    ctx = make_context(window=128_000, output_budget=8_000, policy="on_demand")
    ctx.economics = CacheEconomics(cache_read=0.0, cache_write=1.25)  # reads free: no fold pays
    answers = agent_rereads_config(ctx, attempts=5)
    request = ctx.prepare().request
    # Nothing was folded: the first read is still in the request, so the re-reads are
    # short notes pointing at text that is really there.
    assert ctx.folds == []
    assert any(message.text == CONFIG for message in request.messages)
    assert all(answer.startswith("[unchanged] src/config.py") for answer in answers)


def test_on_demand_serves_the_full_text_again_once_it_was_folded_out():
    ctx = make_context(window=12_000, output_budget=1_000, policy="on_demand")
    answers = agent_rereads_config(ctx, attempts=8)
    assert ctx.folds, "the small window forces folds"
    first = ctx.observations[0]
    assert first.state is ObsState.RECEIPTED
    entry = ctx.ledger.lookup(first.source.read)
    assert entry is not None
    # After a fold the next re-read got the whole text, never a receipt.
    assert CONFIG in answers
    assert not any(answer.startswith("[already read]") for answer in answers)
    assert any(message.text == CONFIG for message in ctx.prepare().request.messages)


def test_eager_alone_with_the_session_ledger_does_not_deadlock_either():
    ctx = make_context(window=128_000, output_budget=8_000, policy="eager")
    answers = agent_rereads_config(ctx, attempts=3)
    assert answers[0] == CONFIG  # evicted by eager, so served whole again


def test_a_reread_noted_at_a_boundary_whose_fold_evicts_its_text_is_served_the_text():
    """The note was decided when the result came in; the fold came after, at the same
    boundary, and took the text it points at: the model gets the text (there is room
    for it under the ceiling), not a receipt in answer to the read it just asked for."""
    ctx = make_context(window=12_000, output_budget=500, policy="on_demand")
    ctx.economics = CacheEconomics(cache_read=0.0, cache_write=1.25)  # only the ceiling folds
    config, big = file_text("src/config.py", 2, 60), file_text("src/big.py", 1, 200)
    ctx.add_user("Fix the config loader.", kind="task")
    reads = [("src/config.py", config), ("src/big.py", big), ("src/x.py", "x = 1\n"), ("src/y.py", "y = 2\n")]
    for n, (path, text) in enumerate(reads):
        assert ctx.prepare().fold is None
        ctx.add_assistant(f"reading {path}", (call(f"c{n}", path=path),))
        ctx.add_tool_result(read_input(f"c{n}", path, text))
    assert ctx.prepare().fold is None
    ctx.add_assistant("config again, and a.py", (call("c4", path="src/config.py"), call("c5", path="src/a.py")))
    again = ctx.add_tool_result(read_input("c4", "src/config.py", config))
    ctx.add_tool_result(read_input("c5", "src/a.py", file_text("src/a.py", 1, 200)))
    assert again.alias_of == 0  # a note while the first copy was in the request

    boundary = ctx.prepare()
    assert boundary.fold is not None and boundary.fold.evicted[:2] == (0, 1)
    assert (again.alias_of, again.reread_of) == (None, 0) and boundary.fold.revived == (again.obs_id,)
    tool_texts = [m.text for m in boundary.request.messages if m.role == "tool"]
    assert tool_texts[0].startswith("[receipt ") and tool_texts[4] == config
    assert boundary.projection <= ctx.budget.ceiling
    entry = ctx.ledger.lookup(again.source.read)
    assert entry is not None and (entry.obs_id, entry.in_context) == (again.obs_id, True)


def test_a_result_a_fresh_note_points_at_is_in_use_whatever_its_age():
    ctx = make_context(window=128_000, output_budget=8_000, policy="on_demand")
    ctx.economics = CacheEconomics(cache_read=0.0, cache_write=1.25)  # no fold before the note
    ctx.add_user("Fix the config loader.", kind="task")
    reads = [("src/config.py", CONFIG)] + [(f"src/other{n}.py", f"x = {n}\n") for n in range(3)]
    reads.append(("src/config.py", CONFIG))
    for n, (path, text) in enumerate(reads):
        ctx.prepare()
        ctx.add_assistant(f"reading {path}", (call(f"c{n}", path=path),))
        ctx.add_tool_result(read_input(f"c{n}", path, text))
    first, again = ctx.observations[0], ctx.observations[-1]
    assert again.alias_of == first.obs_id and first.step < ctx.step - 1
    assert ctx.view.is_hot(first) and ctx.view.hot_gain() >= first.gain > 0  # a fold due by cost keeps it
    ctx.prepare()
    ctx.add_assistant("done reading")  # the model saw the note: the first copy ages again
    assert not ctx.view.is_hot(first)


def test_a_note_served_as_text_by_a_fold_leaves_the_request_under_the_ceiling():
    """The revived text is judged on the basis the request is then checked on (not the
    provider's last count, which the fold voids), with the trigger's margin: a
    fallback model's low count once let it fill the request past the ceiling."""
    ctx = make_context(window=20_000, output_budget=500, policy="on_demand")
    ctx.economics = CacheEconomics(cache_read=0.0, cache_write=1.25)  # only the ceiling folds
    big = file_text("src/big.py", 1, 420)
    ctx.add_user("task", kind="task")
    ctx.prepare()
    ctx.add_assistant("read big", (call("c0", path="src/big.py"),))
    first = ctx.add_tool_result(read_input("c0", "src/big.py", big))
    for n in range(1, 4):
        ctx.prepare()
        ctx.add_assistant(f"r{n}", (call(f"c{n}", path=f"src/o{n}.py"),))
        ctx.add_tool_result(read_input(f"c{n}", f"src/o{n}.py", file_text(f"src/o{n}.py", 1, 40)))
    sent = ctx.prepare()
    ctx.add_assistant("big again + more", (call("c8", path="src/big.py"), call("c9", path="src/more.py")))
    ctx.record_usage(round(sent.projection * 0.88), learn=False)  # a fallback model's count
    again = ctx.add_tool_result(read_input("c8", "src/big.py", big))
    ctx.add_tool_result(read_input("c9", "src/more.py", file_text("src/more.py", 1, 230)))
    assert again.alias_of == first.obs_id
    boundary = ctx.prepare()  # was ContextTooLarge: 19,166 > 18,000
    assert boundary.projection <= ctx.budget.ceiling and boundary.fold is not None
