"""Making a room from its team's repository on a forge, through the new-room form: only
on hosts the operator allows, the token kept and never shown again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rooms.models import Room, RoomUpstream
from tests.rooms.factories import make_user
from tests.rooms.test_upstream import TOKEN, forge  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def _post(client, **fields):
    return client.post(reverse("rooms:create"), {"name": "Linked", "source": "upstream", "upstream_branch": "main",
                                                 "upstream_after_work": "push_main", **fields})


def test_a_room_made_from_an_upstream_keeps_its_link_and_never_shows_the_token(client, forge, settings):  # noqa: F811
    served, _work = forge
    settings.ATRIUM_UPSTREAM_HOSTS = [served.url]
    client.force_login(make_user("ada"))
    made = _post(client, upstream_url=f"{served.url}/team/app.git", upstream_token=TOKEN)
    assert made.status_code == 302
    room = Room.objects.get()
    link = RoomUpstream.objects.get(room=room)
    assert (link.url, link.branch, link.token) == (f"{served.url}/team/app.git", "main", TOKEN)
    page = client.get(made["Location"]).content.decode()
    assert f"{served.url}/team/app.git" in page and TOKEN not in page
    assert "app.py" in client.get(reverse("rooms:code", args=[room.slug])).content.decode()


@pytest.mark.parametrize(("fields", "field", "says"), [
    ({"upstream_url": "https://elsewhere.example/team/app.git"}, "upstream_url", "not a host"),
    ({"upstream_url": "URL/team/app.git", "upstream_branch": "--upload-pack=x"}, "upstream_branch", "not a branch"),
    ({"upstream_url": "URL/team/app.git", "upstream_after_work": "propose"}, "upstream_forge", "name the forge"),
    ({"upstream_url": "URL/team/missing.git"}, "upstream_url", "could not be read"),
    ({"upstream_url": "URL/team/app.git", "upstream_api_url": "https://elsewhere.example/api"}, "upstream_api_url",
     "not a host"),
    ({"upstream_url": "URL/team/app.git", "upstream_token": "with space"}, "upstream_token", "printable ASCII"),
])
def test_a_refused_upstream_says_why_and_keeps_no_token_in_the_form(client, forge, settings, fields, field,  # noqa: F811
                                                                    says):
    served, _work = forge
    settings.ATRIUM_UPSTREAM_HOSTS = [served.url]
    client.force_login(make_user("ada"))
    fields = {name: value.replace("URL", served.url) for name, value in fields.items()}
    page = _post(client, **{"upstream_token": TOKEN, **fields})
    assert page.status_code == 200 and not Room.objects.exists()
    assert says in " ".join(page.context["form"].errors.get(field, [])), page.context["form"].errors
    assert TOKEN not in page.content.decode() and "with space" not in page.content.decode()


def test_without_allowed_hosts_the_form_offers_no_upstream(client, settings):
    settings.ATRIUM_UPSTREAM_HOSTS = []
    client.force_login(make_user("ada"))
    page = client.get(reverse("rooms:create")).content.decode()
    assert "upstream_url" not in page
