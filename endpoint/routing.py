"""Where a request its client did not name goes: the conversation of the latest of the
gateway's answers its history holds (``conversation.route``), read by statements
written out."""

from __future__ import annotations

import functools

from django.db import connection

from endpoint.conversation import Answered, continues, route
from endpoint.models import GatewayAnswer, GatewayConversation, GatewayKey
from observations.columns import Columns, instances


def routed(key: GatewayKey, digests: list[str], answers: list[str]) -> str | None:
    """The conversation that gave the latest of the gateway's answers in the history
    (``answers``: its ``answer_digests``). The latest answer a history holds is the
    gateway's but where the client changed it: that one is looked up first, the earlier
    ones only if it is not found (every answer of a long session's history, each row
    with its conversation's digests, was hundreds of rows to read per request; a client
    that changes every answer it sends back still reads them all)."""
    given = [d for d in answers if d]
    if not given:
        return None
    found = _answered(key, [given[-1]], digests) or _answered(key, sorted(set(given[:-1])), digests)
    return route(answers, found)


def _answered(key: GatewayKey, answers: list[str], digests: list[str]) -> list[Answered]:
    """The gateway's answers of digest ``answers`` under ``key``, each with its conversation."""
    if not answers:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_answered_statement(len(answers)), [key.pk, *answers])
        rows = cursor.fetchall()
    talks = [(row[0], instances(row[1:], [_ANSWERED_IN])[0]) for row in rows]
    return [Answered(answer, talk.conversation, continues(talk.digests, digests)) for answer, talk in talks]


# What routing reads of a conversation: its name and digests (a timestamp took Django's
# loader longer to read than the rest of the row).
_ANSWERED_IN = Columns(GatewayConversation, "c", deferred=("key", "session", "last_answer", "requests", "created_at",
                                                           "updated_at"))


@functools.cache
def _answered_statement(count: int) -> str:
    """Written out, as the conversation's lock is (endpoint.sessions): read on nearly
    every request."""
    quote, c = connection.ops.quote_name, _ANSWERED_IN
    answer = GatewayAnswer._meta
    column = {name: f"a.{quote(answer.get_field(name).column)}" for name in ("key", "conversation", "digest")}
    return (f"SELECT {column['digest']}, {c.select()} FROM {quote(answer.db_table)} a "
            f"JOIN {c.table} ON {c.column('id')} = {column['conversation']} "
            f"WHERE {column['key']} = %s AND {column['digest']} IN ({', '.join(['%s'] * count)})")
