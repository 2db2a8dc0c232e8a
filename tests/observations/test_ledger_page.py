from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from observations.gateway.state import dump_state
from observations.services import observations_sync
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
    response = client.get(reverse("observations:ledger", args=[session.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="obs obs--') == len(ctx.observations)
    for fold in ctx.folds:
        assert f'id="fold-{fold.number}"' in html
    assert "receipted at fold 1" in html
    assert "note → #0" in html
    assert "re-served (was #0)" in html
    assert f"{ctx.sent_tokens_total:,}" in html
    assert ctx.observations[0].source.sha256[:12] in html


@pytest.mark.django_db
def test_the_ledger_is_only_visible_inside_its_room(client, session_with_folds):
    session, _ = session_with_folds
    stranger = get_user_model().objects.create_user("stranger", password="pw-stranger-1")
    client.force_login(stranger)
    assert client.get(reverse("observations:ledger", args=[session.pk])).status_code == 404
    client.logout()
    response = client.get(reverse("observations:ledger", args=[session.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.django_db
def test_an_observations_text_is_readable_inside_its_room_only(client, owner, session_with_folds):
    session, ctx = session_with_folds
    url = reverse("observations:observation", args=[session.pk, 3])
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200
    assert ctx.observations[3].source.text.splitlines()[0] in response.content.decode()
    assert client.get(reverse("observations:observation", args=[session.pk, 999])).status_code == 404
    client.force_login(get_user_model().objects.create_user("outsider", password="pw-outsider-1"))
    assert client.get(url).status_code == 404
