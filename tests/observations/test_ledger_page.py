from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from observations.gateway.state import dump_state
from sessions.ledger.sync import observations_sync
from tests.gateway.factories import call, file_text, make_context, read_input


@pytest.fixture
def session_with_folds(make_session):
    session = make_session()
    ctx = make_context(window=30_000, output_budget=1_000)
    for n in range(40):
        ctx.prepare()
        path = "src/a.py" if n % 5 == 0 else f"f{n}.py"
        ctx.add_assistant(f"s{n}", (call(f"c{n}", path=path),))
        ctx.add_tool_result(read_input(f"c{n}", path, file_text(path, 0, 150)))
    ctx.prepare()
    observations_sync(session=session, ctx=ctx)
    session.gateway_state = dump_state(ctx)
    session.save()
    return session, ctx


@pytest.mark.django_db
def test_the_ledger_page_shows_each_observation_each_fold_and_the_totals(client, owner, session_with_folds):
    session, ctx = session_with_folds
    client.force_login(owner)
    response = client.get(reverse("sessions:ledger", args=[session.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="obs obs--') == len(ctx.observations)
    for fold in ctx.folds:
        assert f'id="fold-{fold.number}"' in html
    assert "receipted at fold 1" in html
    assert "note → #0" in html
    assert "re-served (was #0)" in html
    assert f"{ctx.book.sent_tokens_total:,}" in html
    assert ctx.observations[0].source.sha256[:12] in html


@pytest.mark.django_db
def test_the_ledger_is_only_visible_inside_its_room(client, session_with_folds):
    session, _ = session_with_folds
    stranger = get_user_model().objects.create_user("stranger", password="pw-stranger-1")
    client.force_login(stranger)
    assert client.get(reverse("sessions:ledger", args=[session.pk])).status_code == 404
    client.logout()
    response = client.get(reverse("sessions:ledger", args=[session.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.django_db
def test_an_observations_text_is_readable_inside_its_room_only(client, owner, session_with_folds):
    session, ctx = session_with_folds
    url = reverse("sessions:observation", args=[session.pk, 3])
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200
    assert ctx.observations[3].source.text.splitlines()[0] in response.content.decode()
    assert client.get(reverse("sessions:observation", args=[session.pk, 999])).status_code == 404
    client.force_login(get_user_model().objects.create_user("outsider", password="pw-outsider-1"))
    assert client.get(url).status_code == 404


@pytest.mark.django_db
def test_each_evicted_observation_shows_the_receipt_the_model_saw(client, owner, session_with_folds):
    from django.utils.html import escape

    from observations.gateway.transcript import ObsState

    session, ctx = session_with_folds
    client.force_login(owner)
    html = client.get(reverse("sessions:ledger", args=[session.pk])).content.decode()
    receipts = html[html.index('id="ledger-receipts"'):]
    evicted = [o for o in ctx.observations if o.state is ObsState.RECEIPTED]
    assert evicted and receipts.count('class="receipt"') == len(evicted)
    for obs in evicted:
        text = ctx.served_text(obs)
        assert text.startswith(f"[receipt {obs.source.sha256[:12]}]") and "recall(" in text
        article = receipts[receipts.index(f'id="receipt-{obs.obs_id}"'):]
        assert escape(text) in article[: article.index("</article>")]


@pytest.mark.django_db
def test_each_fold_shows_what_it_kept_out_of_the_requests_since(client, owner, session_with_folds):
    from decimal import Decimal

    from observations.gateway.economics import CacheEconomics
    from observations.gateway.prices import format_usd
    from sessions.models import ProviderCall

    session, ctx = session_with_folds
    agent = session.agent
    agent.price_input, agent.price_cached_input, agent.price_output = Decimal("3"), Decimal("0.3"), Decimal("15")
    session.agent.save()
    for step in range(1, ctx.step + 2):
        ProviderCall.objects.create(session=session, step=step, model=session.agent.model)
    client.force_login(owner)
    html = client.get(reverse("sessions:ledger", args=[session.pk])).content.decode()
    for fold in ctx.folds:
        since = ctx.step + 1 - fold.step  # the requests of steps fold.step+1 … ctx.step+1
        row = html[html.index(f'id="fold-{fold.number}"'):]
        row = row[: row.index("</tr>")]
        kept = fold.tokens_freed * since
        assert f"<td>{since:,}</td>" in row and f'<td class="fold__kept">{kept:,}</td>' in row
        saved = Decimal(kept) * Decimal("0.3") / Decimal(1_000_000)  # at the cached-read price
        assert f"<td>{format_usd(saved)}</td>" in row
        payback = CacheEconomics.of(agent.price_for(agent.model)).payback_requests(fold.projection_after,
                                                                                  fold.tokens_freed)
        assert f"{max(0.0, payback):,.1f} requests" in row
