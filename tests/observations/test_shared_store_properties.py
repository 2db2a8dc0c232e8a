"""Property: the room's store is shared, a session's context never is (issue 17).

Several sessions of one room add tool results in any interleaving — some byte for byte
the same as another session's (the same file version read, the same command output),
some different — and persist each unit as the worker does: a journal record, then the
observation rows, whose blobs come from the room cache or the content-addressed store
shared by the room. Now and then a session is resumed from its records on "another
worker", its texts fetched from that shared store by SHA-256. Throughout:

- no request a session prepares contains a result it did not itself receive;
- a result new to a session is served whole, never as a note about another session's read;
- its rows, and ``recall`` by any ref, reach only what it received;
- identical bytes are stored once for the whole room.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from observations.blobs import blob_texts
from observations.gateway.budget import Budget
from observations.gateway.journal import StateJournal
from observations.gateway.messages import serialize_request
from observations.gateway.state import load_state
from observations.models import Blob
from sessions.ledger.history import recall_lookup
from sessions.ledger.state_store import gateway_state_read, gateway_state_save
from sessions.ledger.sync import observations_sync
from sessions.models import Observation, Session, StateRecord
from tests.gateway.factories import (
    TOOLS,
    call,
    file_text,
    make_context,
    prepare,
    read_input,
    sha,
    shell_input,
)

SESSIONS = 3
WINDOW, OUTPUT = 4_000, 500  # small: folds (and now and then a new segment) happen

# The results tools can give: two versions of one file, another file, two command
# outputs. Each text carries a marker that appears nowhere else.
CONTENTS = [
    ("read", "src/a.py", "MARK0\n" + file_text("src/a.py", 0, 30)),
    ("read", "src/a.py", "MARK1\n" + file_text("src/a.py", 1, 30)),
    ("read", "src/b.py", "MARK2\n" + file_text("src/b.py", 0, 45)),
    ("shell", "pytest -q", "MARK3\n" + "".join(f"test_{n} PASSED\n" for n in range(60))),
    ("shell", "ls -R", "MARK4\n" + "".join(f"src/module_{n}.py\n" for n in range(80))),
]
SHAS = [sha(text) for _, _, text in CONTENTS]
MARK = re.compile(r"MARK(\d)")

events = st.lists(
    st.one_of(
        st.tuples(st.just("result"), st.integers(0, SESSIONS - 1), st.integers(0, len(CONTENTS) - 1)),
        st.tuples(st.just("resume"), st.integers(0, SESSIONS - 1), st.just(0)),
    ),
    min_size=6, max_size=18,
)


def source_for(call_id: str, content: int):
    kind, where, text = CONTENTS[content]
    return read_input(call_id, where, text) if kind == "read" else shell_input(call_id, where, text)


def markers(text: str) -> set[int]:
    return {int(n) for n in MARK.findall(text)}


class Worker:
    """One session's unit of work, persisted the way sessions.worker.run commits it."""

    def __init__(self, session: Session) -> None:
        self.session, self.calls = session, 0
        self.ctx, self.journal = make_context(window=WINDOW, output_budget=OUTPUT), StateJournal()

    def boundary(self):
        return prepare(self.ctx).request

    def result(self, content: int):
        self.calls += 1
        call_id = f"c{self.calls}"
        source = source_for(call_id, content)
        self.ctx.add_assistant(f"step {self.calls}", (call(call_id, source.tool, **source.arguments),))
        obs = self.ctx.add_tool_result(source)
        self.commit()
        return obs

    def commit(self) -> None:
        saved = self.journal.record(self.ctx)
        gateway_state_save(session=self.session, record=saved)
        observations_sync(session=self.session, ctx=self.ctx, touched=saved.touched)

    def resume(self) -> None:
        """Another worker takes the session over: its state from its records, the texts
        by SHA-256 from the room's store."""
        stored = gateway_state_read(self.session)
        if stored is None:
            return
        shas = {o["source"]["sha256"] for o in stored.state["observations"]}
        self.ctx = load_state(stored.state, texts=blob_texts(shas), model="test:model",
                              system_prompt="You are a careful coding agent.", tools=TOOLS,
                              budget=Budget(window=WINDOW, output_budget=OUTPUT))
        self.journal = stored.journal_for(self.ctx)


@pytest.fixture
def room_sessions(make_session):
    return [make_session(n + 1) for n in range(SESSIONS)]


def fresh(sessions) -> None:
    """Examples share the test's transaction: each starts with sessions that hold nothing."""
    Observation.objects.filter(session__in=sessions).delete()
    StateRecord.objects.filter(session__in=sessions).delete()
    for session in sessions:
        session.ledger_entries.all().delete()
        session.folds.all().delete()
        session.segments.all().delete()
    Blob.objects.filter(sha256__in=SHAS).delete()


@pytest.mark.django_db
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=events)
def test_the_store_is_shared_and_no_request_holds_what_its_session_did_not_receive(room_sessions, events):
    fresh(room_sessions)
    workers = [Worker(session) for session in room_sessions]
    received: list[set[int]] = [set() for _ in workers]
    # A result new to the session, not answered yet, and the segment it arrived in.
    whole: list[tuple[int, int] | None] = [None for _ in workers]

    def boundary(who: int) -> None:
        request = workers[who].boundary()
        assert markers(serialize_request(request)) <= received[who]
        if whole[who] is not None:
            content, segment = whole[who]
            # Served whole, however many other sessions of the room received the same bytes
            # (a new segment may carry a result over as a receipt when it does not fit).
            if workers[who].ctx.segment == segment:
                assert any(CONTENTS[content][2] in m.text for m in request.messages)
            whole[who] = None

    for kind, who, content in events:
        if kind == "resume":
            workers[who].resume()
            continue
        boundary(who)
        obs = workers[who].result(content)
        if content not in received[who]:
            assert obs.alias_of is None  # never a note about another session's read
            whole[who] = (content, workers[who].ctx.segment)
        received[who].add(content)
        event(f"bytes another session received: {any(content in r for r in received[:who] + received[who + 1:])}")

    for who, (worker, mine) in enumerate(zip(workers, received, strict=True)):
        boundary(who)
        event(f"a session folded: {bool(worker.ctx.folds)}")
        event(f"a session started a new segment: {worker.ctx.segment > 1}")
        rows = Observation.objects.filter(session=worker.session)
        assert {SHAS.index(blob) for blob in rows.values_list("blob_id", flat=True)} == mine
        for content, digest in enumerate(SHAS):
            found = recall_lookup(worker.session.pk, digest[:12])
            assert (found is not None) == (content in mine)
            if found is not None:
                assert found[1] == CONTENTS[content][2]
    # Identical bytes, stored once for the room however many sessions received them.
    everyone = set().union(*received)
    assert set(Blob.objects.filter(sha256__in=SHAS).values_list("sha256", flat=True)) == {SHAS[c] for c in everyone}
    assert Observation.objects.filter(session__in=room_sessions).count() == sum(
        1 for kind, _, _ in events if kind == "result")
