"""Personal access tokens: made, listed and revoked by their person; looked up by the git
remote from an HTTP basic ``Authorization`` header.

A token is ``atr-pat-`` and 43 URL-safe characters, stored as its SHA-256 alone
(``rooms.secret_tokens``, as gateway keys are). The basic user name is not read:
the token says who it is, so ``git clone http://anything:TOKEN@…`` works as a URL.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from remote.models import AccessToken
from rooms.checks import check_storable_text
from rooms.errors import RoomError
from rooms.secret_tokens import TOKEN_MAX_LENGTH, could_be, mint, token_digest

TOKEN_PREFIX = "atr-pat-"
NAME_MAX_LENGTH = 80  # AccessToken.name's column
LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is for people: a minute's precision


@dataclass(frozen=True)
class MadeToken:
    """A new token and its text: the only time the text exists outside the client."""

    token: AccessToken
    text: str


@transaction.atomic
def access_token_create(*, user: AbstractBaseUser, name: str) -> MadeToken:
    name = check_storable_text((name or "").strip(), what="The token's name")
    if not name:
        raise RoomError("A token needs a name (where it will be used, e.g. “laptop”).", code="invalid")
    if len(name) > NAME_MAX_LENGTH:
        raise RoomError(f"A token's name is at most {NAME_MAX_LENGTH} characters.", code="invalid")
    text = mint(TOKEN_PREFIX)
    token = AccessToken.objects.create(user=user, name=name, digest=token_digest(text),
                                       prefix=text[: len(TOKEN_PREFIX) + 4])
    return MadeToken(token=token, text=text)


@transaction.atomic
def access_token_revoke(*, user: AbstractBaseUser, token_id: int) -> AccessToken:
    """Revoke one of ``user``'s tokens: the next request with it is refused. Revoking a
    revoked token changes nothing."""
    token = AccessToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise RoomError("You have no such token.", code="unknown_token")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def access_tokens_of(user: AbstractBaseUser) -> QuerySet[AccessToken]:
    return AccessToken.objects.filter(user=user)


def basic_token(authorization: str | None) -> str | None:
    """The password of an HTTP basic ``Authorization`` header, or None."""
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic" or len(encoded) > 4 * TOKEN_MAX_LENGTH:
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _user, sep, password = decoded.partition(":")
    return password if sep else None


def token_user(text: str | None) -> AbstractBaseUser | None:
    """The active person whose live token ``text`` is; None for anything else (no token,
    not one of ours, revoked, its person deactivated), one answer for all."""
    if not could_be(text, TOKEN_PREFIX):
        return None
    token = (AccessToken.objects.select_related("user")
             .filter(digest=token_digest(text), revoked_at__isnull=True, user__is_active=True).first())
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user
