"""Where a session's time went while it held no worker: on approval cards, or on its own
await (a job, a person's reply, a timer). Plain data, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sessions.analysis.facts import Event, SessionFacts
from sessions.analysis.trace import add_up, analyze

START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


def facts(*states: tuple[float, str], finished_after: float | None) -> SessionFacts:
    events = tuple(
        Event(seq=n, kind="session.state_changed", payload={"state": state}, at=START + timedelta(seconds=at))
        for n, (at, state) in enumerate(states, 1)
    )
    finished = START + timedelta(seconds=finished_after) if finished_after is not None else None
    return SessionFacts(session_id=1, title="t", agent="a", model="m", state="succeeded",
                        events=events, finished_at=finished)


def test_approvals_and_awaits_are_counted_apart_and_an_open_one_runs_to_the_end():
    analysis = analyze(facts(
        (0, "running"), (1, "awaiting_approval"), (4, "queued"), (5, "running"),
        (10, "waiting"), (40, "queued"), (41, "running"), (50, "awaiting_approval"),
        finished_after=52,
    ))
    assert (analysis.approvals_ms, analysis.waiting_ms) == (5_000, 30_000)
    assert dict(analysis.rows())["Time"].endswith("waiting for approvals 5.0 s, awaiting 30.0 s")


def test_totals_read_the_approval_time_an_earlier_version_stored_as_people_ms():
    assert add_up([{"people_ms": 1_500}, {"approvals_ms": 500}])["approvals_ms"] == 2_000


def test_a_session_still_parked_counts_only_what_has_ended():
    analysis = analyze(facts((0, "running"), (2, "waiting"), finished_after=None))
    assert analysis.waiting_ms == 0
