"""Claimability and time limits: plain predicates, and the dispatcher's filter agrees
with them row for row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from sessions.runtime import claims, states

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ALL_STATES = sorted(states.TRANSITIONS)
leases = st.one_of(st.none(), st.integers(-3600, 3600).map(lambda s: NOW + timedelta(seconds=s)))


def test_a_queued_session_is_claimable_whatever_its_lease_says():
    assert claims.claimable(state=states.QUEUED, lease_expires_at=NOW + timedelta(hours=1), now=NOW)


def test_a_running_session_is_claimable_only_when_its_lease_ran_out_or_was_released():
    assert not claims.claimable(state=states.RUNNING, lease_expires_at=NOW + timedelta(seconds=1), now=NOW)
    assert not claims.claimable(state=states.RUNNING, lease_expires_at=NOW, now=NOW)  # held to its last instant
    assert claims.claimable(state=states.RUNNING, lease_expires_at=NOW - timedelta(seconds=1), now=NOW)
    assert claims.claimable(state=states.RUNNING, lease_expires_at=None, now=NOW)


@given(state=st.sampled_from(sorted(states.PARKED | states.TERMINAL | {states.NEEDS_MERGE})), lease=leases)
def test_parked_ended_and_merging_sessions_are_never_claimable(state, lease):
    assert not claims.claimable(state=state, lease_expires_at=lease, now=NOW)


def test_a_session_is_over_its_limit_from_the_instant_the_limit_ends():
    started = NOW - timedelta(seconds=60)
    assert not claims.over_time_limit(state=states.RUNNING, started_at=started, time_limit_seconds=61, now=NOW)
    assert claims.over_time_limit(state=states.RUNNING, started_at=started, time_limit_seconds=60, now=NOW)


@given(state=st.sampled_from(ALL_STATES), limit=st.integers(0, 10_000))
def test_an_unstarted_session_never_times_out(state, limit):
    assert not claims.over_time_limit(state=state, started_at=None, time_limit_seconds=limit, now=NOW)


@given(state=st.sampled_from(ALL_STATES))
def test_only_states_that_may_go_to_timed_out_time_out(state):
    long_ago = NOW - timedelta(days=1)
    over = claims.over_time_limit(state=state, started_at=long_ago, time_limit_seconds=1, now=NOW)
    assert over == (states.TIMED_OUT in states.TRANSITIONS[state])
    assert not (over and state in states.TERMINAL | {states.NEEDS_MERGE})


def test_worker_and_sweep_give_the_same_reason():
    assert claims.time_out_reason(3600) == "timed out: ran longer than its limit of 3600 s"


def test_the_dispatchers_filter_claims_exactly_the_sessions_the_predicate_does(person, demo_room, replay_agent):
    from sessions import dispatch
    from sessions.models import Session
    from sessions.services.lifecycle import session_start
    from sessions.services.tasks import task_create

    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    offsets = [None, -60, 0, 60]
    for state in ALL_STATES:
        for offset in offsets:
            for owner in ("", "host:1:abc"):
                lease = None if offset is None else NOW + timedelta(seconds=offset)
                Session.objects.filter(pk=session.pk).update(state=state, lease_expires_at=lease, lease_owner=owner)
                rows = Session.objects.filter(pk=session.pk)
                assert rows.filter(dispatch.claimable(NOW)).exists() == claims.claimable(
                    state=state, lease_expires_at=lease, now=NOW), (state, offset)
                assert rows.filter(dispatch.not_held(NOW)).exists() != claims.held(
                    lease_owner=owner, lease_expires_at=lease, now=NOW), (owner, offset)


def test_a_session_is_held_only_by_a_named_owner_with_a_live_lease():
    soon = NOW + timedelta(seconds=5)
    assert claims.held(lease_owner="host:1:abc", lease_expires_at=soon, now=NOW)
    assert not claims.held(lease_owner="", lease_expires_at=soon, now=NOW)
    assert not claims.held(lease_owner="host:1:abc", lease_expires_at=NOW - timedelta(seconds=1), now=NOW)
    assert not claims.held(lease_owner="host:1:abc", lease_expires_at=None, now=NOW)
