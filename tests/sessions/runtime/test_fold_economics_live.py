"""A live session's fold economics come from the database: how long the agent's earlier
sessions on the same model ran, and the cache prices of its model (or its profile's)."""

from __future__ import annotations

import re
from decimal import Decimal

from observations.gateway.economics import CacheEconomics
from sessions.models import Session, SessionEvent, Task
from sessions.selectors import session_lengths
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session


def finished(agent, task: Task, steps: int, *, model: str | None = None, state: str = "succeeded") -> Session:
    attempt = Session.objects.filter(task=task, agent=agent).count() + 1
    return Session.objects.create(task=task, agent=agent, model=model or agent.model, attempt=attempt,
                                  state=state, step=steps)


def test_the_work_ahead_is_learned_from_the_agents_finished_sessions_on_the_same_model(
        person, demo_room, replay_agent, allow_demo_tools):
    old = task_create(room=demo_room, actor=person, title="Earlier work", objective="Done before")
    for steps in [200] * 10:
        finished(replay_agent, old, steps)
    finished(replay_agent, old, 3, model="anthropic:claude-sonnet-4-5")  # another model: not counted
    finished(replay_agent, old, 7, state="running")  # not finished: not counted
    assert sorted(session_lengths(replay_agent, replay_agent.model)) == [200] * 10

    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    assert session.model == replay_agent.model
    assert run_session(session.pk) == "ran"
    notes = [e.payload.get("note", "") for e in SessionEvent.objects.filter(session=session, kind="step.started")]
    ahead = [int(m.group(1)) for note in notes if (m := re.search(r"~(\d+) (?:ahead|requests)", note))]
    # Each boundary's decision counted on the 200-step sessions before it: 200 − step ahead.
    assert ahead and all(190 <= n <= 200 for n in ahead), notes


def test_the_cache_prices_come_from_the_price_table_or_the_profiles_own(replay_agent):
    assert CacheEconomics.of(replay_agent.price_for(replay_agent.model)) == CacheEconomics()  # a recording
    replay_agent.model = "openai:gpt-4.1"
    assert CacheEconomics.of(replay_agent.price_for(replay_agent.model)).cache_read == 0.25
    replay_agent.price_input, replay_agent.price_cached_input = Decimal("2"), Decimal("1")
    assert CacheEconomics.of(replay_agent.price_for(replay_agent.model)).cache_read == 0.5
