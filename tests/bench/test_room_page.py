"""Benchmark: the room page with 100 sessions of long history (issue 15).

Run: .venv/bin/pytest -m bench tests/bench/test_room_page.py -s
(PostgreSQL, as CI runs the tests; BENCH_ROOM_STEPS=100 for a short run).

Two rooms of 100 tasks with one session each (running, waiting, succeeded, failed in
turn), alike but for the length of the sessions' history:
- short (the baseline): 5 steps each;
- long: BENCH_ROOM_STEPS steps each (default 500).
A session's history is what a worker leaves: one session is run through the gateway
(the benchmark's unit from test_state_persistence), its state saved unit by unit
(StateRecord rows, observations_sync) with the step loop's events (step.started,
model.reply, two tool.result per step); the other 99 get copies of its rows. Each
session's runtime state, decisions and analysis are set as a worker leaves them.

Timed with Django's test Client, REPEATS requests each after a warm-up: the room page,
its two htmx reloads (the work region, the totals panel), and the totals panel while
the room is live (one event appended to one session before each request, so its
stored analysis is stale, as a running session's is). Printed per request: p50 / p99
ms for short and long, their ratio, and the queries each request ran.
"""

from __future__ import annotations

import os
import time

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from observations.gateway.journal import StateJournal
from sessions.events import session_event_append
from sessions.ledger.state_store import gateway_state_save
from sessions.ledger.sync import observations_sync
from sessions.models import (
    Fold,
    HistoryEntry,
    LedgerEntry,
    Observation,
    Payload,
    Segment,
    Session,
    SessionEvent,
    StateRecord,
    Task,
)
from sessions.services.records import session_analysis_refresh
from tests.bench.test_state_persistence import context_for, unit
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

SESSIONS = 100
SHORT = 5
LONG = int(os.environ.get("BENCH_ROOM_STEPS", "500"))
REPEATS = int(os.environ.get("BENCH_ROOM_REPEATS", "30"))
STATES = ("running", "waiting", "succeeded", "failed")
HTMX = {"HTTP_HX_REQUEST": "true"}
# Everything a worker writes per session, copied from the one session really run.
HISTORY = (StateRecord, Observation, Payload, LedgerEntry, Fold, Segment, HistoryEntry, SessionEvent)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run_session(session: Session, steps: int) -> None:
    """``steps`` units as a worker commits them: state record, rows, the loop's events."""
    ctx, journal = context_for(steps), StateJournal()
    for n in range(steps):
        unit(ctx, n)
        with transaction.atomic():
            record = journal.record(ctx)
            gateway_state_save(session=session, record=record)
            observations_sync(session=session, ctx=ctx, touched=record.touched)
            session_event_append(session, "step.started", {"step": n + 1, "projection": ctx.estimate})
            session_event_append(session, "model.reply", {
                "step": n + 1, "text": f"step {n}: look at src/m{n % 40}.py", "input_tokens": ctx.estimate,
                "cached_input_tokens": ctx.estimate // 2, "output_tokens": 120, "model": "replay",
                "tool_calls": [{"id": f"r{n}", "name": "read_file", "arguments": {"path": f"src/m{n % 40}.py"}},
                               {"id": f"s{n}", "name": "shell", "arguments": {"command": "pytest -q"}}]})
            for call, tool in ((f"r{n}", "read_file"), (f"s{n}", "shell")):
                session_event_append(session, "tool.result", {
                    "step": n + 1, "call_id": call, "tool": tool, "purpose": tool, "is_error": False,
                    "job": None, "unknown": False, "served": "text", "tokens": 300,
                    "preview": f"line {n} of the build output\n" * 10, "duration_ms": 40})
    Session.objects.filter(pk=session.pk).update(
        step=steps, tokens_input=900 * steps, tokens_cached=400 * steps, tokens_output=120 * steps,
        runtime_state={"phase": "boundary", "chat_cursor": 0, "calls": [], "loop_alarms": [],
                       "nudged": [], "session_allowed": [], "last_reply": "x" * 2000},
        decisions=ctx.decisions.to_json())


def copy_history(template: Session, sessions: list[Session]) -> None:
    fields = Session.objects.values("step", "tokens_input", "tokens_cached", "tokens_output", "runtime_state",
                                    "decisions", "last_event_seq").get(pk=template.pk)
    for model in HISTORY:
        rows = list(model.objects.filter(session=template).values())
        for session in sessions:
            model.objects.bulk_create([model(**{**row, "id": None, "session_id": session.pk}) for row in rows],
                                      batch_size=2000)
    Session.objects.filter(pk__in=[s.pk for s in sessions]).update(**fields)


def build_room(owner, agent, name: str, steps: int):
    room = make_room(owner, name, agents=[agent])
    sessions = []
    for n in range(SESSIONS):
        task = Task.objects.create(room=room, title=f"Task {n}", objective="Fix it", created_by=owner)
        sessions.append(Session.objects.select_related("task").get(
            pk=Session.objects.create(task=task, agent=agent, state=STATES[n % len(STATES)]).pk))
    run_session(sessions[0], steps)
    copy_history(sessions[0], sessions[1:])
    for session in sessions:  # the stored analysis, as after the room's first view
        session_analysis_refresh(session)
    return room, sessions


def timed_gets(client: Client, url: str, headers: dict, before=None) -> tuple[list[float], int]:
    times, queries = [], 0
    for n in range(REPEATS + 2):
        if before is not None:
            before()
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(url, **headers)
            elapsed = time.perf_counter() - start
        assert response.status_code == 200
        if n >= 2:  # the first two warm caches (templates, the session)
            times.append(elapsed)
            queries = len(captured)
    return times, queries


def grow_log(session: Session):
    def append() -> None:
        with transaction.atomic():
            session_event_append(session, "step.started", {"step": 1, "projection": 1000})
    return append


@pytest.mark.timeout(3600)
def test_the_room_page_with_100_sessions_of_long_history():
    owner = make_user("olga")
    agent = make_agent("fixer")
    began = time.perf_counter()
    rooms = {"short": build_room(owner, agent, "Short history", SHORT),
             "long": build_room(owner, agent, "Long history", LONG)}
    built = time.perf_counter() - began
    client = Client()
    client.force_login(owner)
    results = {}
    for label, (room, sessions) in rooms.items():
        requests = {
            "room page": (reverse("room", args=[room.slug]), {}, None),
            "work region (htmx)": (reverse("sessions:room_tasks", args=[room.slug]), HTMX, None),
            "totals panel (htmx)": (reverse("sessions:room_totals", args=[room.slug]), HTMX, None),
            "totals, a session's log growing": (reverse("sessions:room_totals", args=[room.slug]), HTMX,
                                                grow_log(sessions[0])),
        }
        results[label] = {name: timed_gets(client, url, headers, before)
                          for name, (url, headers, before) in requests.items()}
    events = SessionEvent.objects.filter(session=rooms["long"][1][0]).count()
    records = StateRecord.objects.filter(session=rooms["long"][1][0]).count()
    observations = Observation.objects.filter(session=rooms["long"][1][0]).count()
    print(f"\nroom page, {SESSIONS} sessions of {SHORT} steps (short) against {LONG} steps (long; per session "
          f"{events:,} events, {observations:,} observations, {records:,} state records); "
          f"{REPEATS} requests each; rooms built in {built:.0f} s")
    print("  request                          | short p50 / p99 ms | long p50 / p99 ms | long/short p50, p99 "
          "| queries short / long")
    for name in results["short"]:
        (short, short_q), (long, long_q) = results["short"][name], results["long"][name]
        print(f"  {name:<32} | {percentile(short, 50) * 1e3:7.1f} / {percentile(short, 99) * 1e3:7.1f} | "
              f"{percentile(long, 50) * 1e3:7.1f} / {percentile(long, 99) * 1e3:7.1f} | "
              f"{percentile(long, 50) / percentile(short, 50):5.2f}x, {percentile(long, 99) / percentile(short, 99):5.2f}x "
              f"| {short_q} / {long_q}")
    for name in results["short"]:  # sanity, not a target: history length must not multiply the page's cost
        assert results["long"][name][1] == results["short"][name][1], f"{name}: queries grow with history"
