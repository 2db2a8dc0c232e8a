"""A re-read that came in as a note and that a fold at the same boundary served as text
after all: the ledger's rows say what the model received (the worker saves the result
in its tool's unit, before the fold)."""

from __future__ import annotations

import pytest

from observations.gateway.economics import CacheEconomics
from observations.gateway.journal import StateJournal
from sessions.ledger.sync import observations_sync
from sessions.models import Observation
from tests.gateway.factories import call, file_text, make_context, read_input

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("touched_only", [True, False], ids=["unit", "snapshot"])
def test_the_row_of_a_note_a_fold_served_as_text_says_text(make_session, touched_only):
    session = make_session()
    journal = StateJournal()
    ctx = make_context(window=12_000, output_budget=500, policy="on_demand")
    ctx.economics = CacheEconomics(cache_read=0.0, cache_write=1.25)  # only the ceiling folds

    def save() -> None:  # as the worker's unit commit saves its rows
        observations_sync(session=session, ctx=ctx, touched=journal.record(ctx).touched if touched_only else None)

    config = file_text("src/config.py", 2, 60)
    ctx.add_user("Fix the config loader.", kind="task")
    reads = [("src/config.py", config), ("src/big.py", file_text("src/big.py", 1, 200)), ("src/x.py", "x = 1\n")]
    for n, (path, text) in enumerate(reads):
        ctx.prepare()
        ctx.add_assistant(f"reading {path}", (call(f"c{n}", path=path),))
        ctx.add_tool_result(read_input(f"c{n}", path, text))
        save()
    ctx.prepare()
    ctx.add_assistant("config again, and a.py", (call("c4", path="src/config.py"), call("c5", path="src/a.py")))
    again = ctx.add_tool_result(read_input("c4", "src/config.py", config))
    ctx.add_tool_result(read_input("c5", "src/a.py", file_text("src/a.py", 1, 200)))
    save()
    row = Observation.objects.get(session=session, call_id="c4")
    assert (row.served, row.alias_of_seq) == (Observation.Served.NOTE, 0)  # what it was when it came in

    boundary = ctx.prepare()  # the fold takes the first copy and serves the note's text
    ctx.add_assistant("ok", ())
    save()
    assert boundary.fold is not None and (again.alias_of, again.reread_of) == (None, 0)
    row.refresh_from_db()
    assert (row.served, row.alias_of_seq, row.reread_of_seq) == (Observation.Served.REREAD, None, 0)
    assert Observation.objects.get(session=session, call_id="c0").state == Observation.State.RECEIPTED
