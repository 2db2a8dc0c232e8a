"""Personal access tokens: made and shown once, stored hashed, revoked by their person
alone, and read from an HTTP basic header; the profile page that makes them."""

from __future__ import annotations

import base64

import pytest
from django.urls import reverse

from remote.models import AccessToken
from remote.tokens import (
    TOKEN_PREFIX,
    access_token_create,
    access_token_revoke,
    basic_token,
    token_user,
)
from rooms.errors import RoomError
from rooms.secret_tokens import token_digest
from tests.rooms.factories import make_user


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(("header", "expected"), [
    (_basic("ada", "atr-pat-abc"), "atr-pat-abc"),
    (_basic("", "atr-pat-abc"), "atr-pat-abc"),
    (_basic("ada", "with:colon"), "with:colon"),
    ("basic " + base64.b64encode(b"x:y").decode(), "y"),
    ("Bearer atr-pat-abc", None),
    ("Basic !!!", None),
    ("Basic " + base64.b64encode(b"no colon").decode(), None),
    ("Basic " + base64.b64encode(b"\xff:\xfe").decode(), None),
    ("Basic " + "A" * 2000, None),
    ("", None),
    (None, None),
])
def test_the_password_of_a_basic_header(header, expected):
    assert basic_token(header) == expected


@pytest.mark.django_db
def test_a_token_is_stored_hashed_and_names_its_person_until_revoked():
    ada, bob = make_user("ada"), make_user("bob")
    made = access_token_create(user=ada, name="laptop")
    assert made.text.startswith(TOKEN_PREFIX) and len(made.text) == len(TOKEN_PREFIX) + 43
    row = AccessToken.objects.get()
    assert row.digest == token_digest(made.text) and made.text not in (row.digest, row.prefix)
    assert token_user(made.text) == ada
    assert token_user(made.text + "x") is None and token_user("atr-gw-" + made.text[8:]) is None
    with pytest.raises(RoomError, match="no such token"):
        access_token_revoke(user=bob, token_id=row.pk)
    assert token_user(made.text) == ada
    access_token_revoke(user=ada, token_id=row.pk)
    assert token_user(made.text) is None
    access_token_revoke(user=ada, token_id=row.pk)  # again: nothing changes
    other = access_token_create(user=ada, name="desk")
    ada.is_active = False
    ada.save()
    assert token_user(other.text) is None


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "says"), [("", "needs a name"), ("x" * 81, "at most 80"), ("a\x00b", "NUL")])
def test_a_token_needs_a_name_a_database_can_hold(name, says):
    with pytest.raises(RoomError, match=says):
        access_token_create(user=make_user(), name=name)
    assert not AccessToken.objects.exists()


@pytest.mark.django_db
def test_the_profile_page_shows_a_new_token_once_and_revokes_it(client):
    ada = make_user("ada")
    client.force_login(ada)
    page = client.get(reverse("remote:profile"))
    assert page.status_code == 200 and b"No tokens yet." in page.content
    made = client.post(reverse("remote:token_new"), {"name": "laptop"})
    assert made.status_code == 200
    token = AccessToken.objects.get(user=ada)
    text = made.context["new_token"]
    assert token_digest(text) == token.digest and text.encode() in made.content
    again = client.get(reverse("remote:profile"))
    assert text.encode() not in again.content and token.prefix.encode() in again.content
    assert client.post(reverse("remote:token_new"), {"name": ""}).status_code == 400
    revoked = client.post(reverse("remote:token_revoke", args=[token.pk]))
    assert revoked.status_code == 200 and b"Token revoked." in revoked.content
    assert token_user(text) is None


@pytest.mark.django_db
def test_another_persons_token_cannot_be_revoked_from_the_page(client):
    ada, bob = make_user("ada"), make_user("bob")
    made = access_token_create(user=ada, name="laptop")
    client.force_login(bob)
    page = client.post(reverse("remote:token_revoke", args=[made.token.pk]))
    assert page.status_code == 400 and b"You have no such token." in page.content
    assert token_user(made.text) == ada


@pytest.mark.django_db
def test_the_profile_page_needs_a_login(client):
    assert client.get(reverse("remote:profile")).status_code == 302
