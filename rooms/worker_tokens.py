"""The git remote's credential for a worker (issue 32): a worker on a machine of its own
fetches its session's room repository and pushes the session's branch with a token that
names the room, the session and the worker holding the session's lease.

``atr-wkr-`` and a value signed with the hub's SECRET_KEY (``django.core.signing``;
every process of a hub shares the key), so no row is stored and a worker mints its own.
The remote honours it only while that worker holds the session's lease
(``remote.pushes``): a worker whose lease ran out, and another took the session, can push
nothing over the new holder's work. Plain Python over the signature: no database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.core import signing

WORKER_TOKEN_PREFIX = "atr-wkr-"
WORKER_TOKEN_MAX_LENGTH = 400  # a session id, a worker's name and a signature
_SALT = "atrium.remote.worker-token"
_MAX_AGE = timedelta(days=1)  # a session's worker mints a new one each time it claims it


@dataclass(frozen=True, slots=True)
class WorkerToken:
    room_id: int
    session_id: int
    owner: str  # the worker's name, as the session's lease holds it


def worker_token_mint(*, room_id: int, session_id: int, owner: str) -> str:
    token = WORKER_TOKEN_PREFIX + signing.dumps({"room": room_id, "session": session_id, "owner": owner}, salt=_SALT)
    if len(token) > WORKER_TOKEN_MAX_LENGTH:  # the remote would not read it back
        raise ValueError(f"a worker's name of {len(owner)} characters is too long for its token")
    return token


def worker_token_read(text: str | None) -> WorkerToken | None:
    """The session and worker a token names, or None for anything that is not one the
    hub signed in the last day."""
    if not text or len(text) > WORKER_TOKEN_MAX_LENGTH or not text.startswith(WORKER_TOKEN_PREFIX):
        return None
    try:
        value = signing.loads(text.removeprefix(WORKER_TOKEN_PREFIX), salt=_SALT, max_age=_MAX_AGE)
    except signing.BadSignature:  # a forged, altered or expired token
        return None
    if not isinstance(value, dict):
        return None
    room_id, session_id, owner = value.get("room"), value.get("session"), value.get("owner")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (room_id, session_id)):
        return None
    if not isinstance(owner, str) or not owner:
        return None
    return WorkerToken(room_id=room_id, session_id=session_id, owner=owner)
