"""Tokens the hub hands out (gateway keys, personal access tokens): 256 random bits after
a prefix that says what they are, stored only as their SHA-256, so a copy of the database
opens nothing and a lookup by digest is an exact index match (nothing to learn from its
timing: the digest of a guess says nothing about the digests near it)."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_MAX_LENGTH = 200  # anything longer is not one of ours; not even hashed


def mint(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def could_be(token: str | None, prefix: str) -> bool:
    """Whether ``token`` is worth a lookup: one of ours by its shape."""
    return bool(token) and len(token) <= TOKEN_MAX_LENGTH and token.startswith(prefix) and token.isascii()
