"""The demo session (seed_demo, the recorded demo model) read back: its fixed-prefix
breakdown on its page, adding up to the request's size; its cost at the price the
demo profile carries; no loop alarm; room and agent totals."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from observations.gateway.breakdown import breakdown_total
from observations.gateway.prices import format_usd
from sessions.analysis.prefix import latest_breakdown
from sessions.analysis.selectors import session_facts
from sessions.analysis.trace import analyze
from sessions.models import Approval, ProviderCall, Session, SessionEvent
from sessions.services.approvals import approval_decide
from sessions.services.talk import session_steer
from sessions.worker.run import run_session
from tests.hub.test_seed_demo import seed

pytestmark = pytest.mark.django_db(transaction=True)
# The estimator's error against a provider's count: p95 of 5% on the development set
# (observations/gateway/tokens.py).
ESTIMATOR_ERROR = 0.05


@pytest.fixture
def demo_session():
    """The demo played as a person plays it: its question answered, its edit approved."""
    seed()
    demo = get_user_model().objects.get(username="demo")
    session = Session.objects.get(task__room__name="Demo")
    for answer in (lambda: session_steer(session=session, actor=demo, text="Go ahead."),
                   lambda: approval_decide(approval=Approval.objects.get(session=session, state="pending"),
                                           actor=demo, decision="approve"),
                   None):
        assert run_session(session.pk) == "ran"
        session.refresh_from_db()
        if answer:
            answer()
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    return session


def test_every_request_of_the_demo_adds_up_to_its_size_and_the_page_shows_the_latest(client, demo_session):
    calls = list(ProviderCall.objects.filter(session=demo_session))
    assert len(calls) == 6
    for call in calls:
        parts = call.prefix
        assert set(parts) == {"system", "tools", "intent", "conversation"}
        assert abs(breakdown_total(parts) - call.input_tokens) <= ESTIMATOR_ERROR * call.input_tokens
        assert parts["tools"]["tokens"] == sum(t["tokens"] for t in parts["tools"]["each"].values())
    client.force_login(get_user_model().objects.get(username="demo"))
    html = client.get(reverse("sessions:session", args=[demo_session.pk])).content.decode()
    table = html[html.index('id="prefix-breakdown"'):]
    last = calls[-1].prefix
    for part in ("system", "tools", "intent", "conversation", *last["tools"]["each"]):
        assert f'data-part="{part}"' in table
    assert f'<td id="breakdown-estimated">{breakdown_total(last):,}</td>' in table
    assert f'<td id="breakdown-reported">{calls[-1].input_tokens:,}</td>' in table
    assert latest_breakdown(session_facts(demo_session).calls).error_percent is not None


def test_the_demo_is_priced_raises_no_loop_alarm_and_draws_its_chart(client, demo_session):
    analysis = analyze(session_facts(demo_session))
    assert analysis.cost is not None and analysis.cost > 0 and analysis.cost_unknown_calls == 0
    assert not SessionEvent.objects.filter(session=demo_session, kind="loop.suspected").exists()
    client.force_login(get_user_model().objects.get(username="demo"))
    html = client.get(reverse("sessions:session", args=[demo_session.pk])).content.decode()
    assert f'<span id="session-cost">{format_usd(analysis.cost)}</span>' in html
    assert 'data-requests="6"' in html and len(re.findall(r'<circle class="chart__point" data-step', html)) == 6
    assert "chart__limit--trigger" in html and "chart__limit--ceiling" in html and "chart__limit--window" in html
    assert 'id="session-loop-badge"' not in html


def test_room_and_agent_pages_add_up_the_sessions_for_members_only(client, demo_session):
    room = demo_session.task.room
    demo = get_user_model().objects.get(username="demo")
    client.force_login(demo)
    analysis = analyze(session_facts(demo_session))
    html = client.get(reverse("room", args=[room.slug])).content.decode()
    totals = html[html.index('id="room-totals"'):]
    assert "<dt>Cost</dt><dd>" + format_usd(analysis.cost) in totals
    assert f"<dt>Model calls</dt><dd>{analysis.model_calls}" in totals
    demo_session.refresh_from_db()
    assert demo_session.analysis_seq == demo_session.last_event_seq  # stored for the next page
    page = client.get(reverse("sessions:agent_detail", args=[demo_session.agent_id])).content.decode()
    assert "in your rooms: 1 session" in page and "<dt>Cost</dt><dd>" + format_usd(analysis.cost) in page
    partial = client.get(reverse("sessions:room_totals", args=[room.slug])).content.decode()
    assert 'id="room-totals"' in partial and "hx-trigger=\"session-changed from:#room" in partial

    client.force_login(get_user_model().objects.create_user("outsider", password="pw-outsider-1"))
    page = client.get(reverse("sessions:agent_detail", args=[demo_session.agent_id])).content.decode()
    assert "in your rooms: 0 sessions" in page and "Fix median" not in page
    assert client.get(reverse("sessions:room_totals", args=[room.slug])).status_code == 404
