"""A session's ended segments, searchable, and `recall` of what the session received.

Search is the database's own full-text search: PostgreSQL's ``to_tsvector`` with a GIN
index, SQLite's FTS5 table kept by triggers (migration 0003). Both look only at the
session's own history; recall looks only at what the session itself received or wrote:
the room's store is shared to save bytes, never to widen what a session may see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVector
from django.db import connection

from observations.blobs import blob_text
from observations.gateway.segments import HistoryItem
from observations.models import Blob
from sessions.models import HistoryEntry, Observation, Payload, Segment

SNIPPET_WORDS = 16
SEARCHED_HEAD, SEARCHED_TAIL = 60_000, 40_000  # characters of a long text that search sees
_WORD = re.compile(r"\w+", re.UNICODE)


def history_record(*, session, segment: int, items: Iterable[HistoryItem]) -> None:
    """Store the ended ``segment`` (called in the unit's transaction that ended it)."""
    HistoryEntry.objects.bulk_create(
        HistoryEntry(session=session, segment=segment, position=n, step=item.step, kind=item.kind,
                     label=item.label[:300], ref=item.ref, call_id=item.call_id, tool=item.tool, text=item.text,
                     search_text=searched_part(item.text))
        for n, item in enumerate(items)
    )


def searched_part(text: str) -> str:
    """All of a text, or its start and its end (where a log's summary is)."""
    if len(text) <= SEARCHED_HEAD + SEARCHED_TAIL:
        return text
    return f"{text[:SEARCHED_HEAD]}\n…\n{text[-SEARCHED_TAIL:]}"


def earlier_segments(session_id: int) -> int:
    return Segment.objects.filter(session_id=session_id).count()


def history_search(session_id: int, query: str, limit: int) -> list[tuple[HistoryEntry, str]]:
    """(entry, snippet) pairs, best first. Every word must match; if none match that
    way, any word may."""
    words = _WORD.findall(query)
    if not words:
        return []
    for mode in ("all", "any"):
        hits = (_postgres if connection.vendor == "postgresql" else _sqlite)(session_id, words, mode, limit)
        if hits or len(words) == 1:
            return hits
    return []


def _sqlite(session_id: int, words: list[str], mode: str, limit: int) -> list[tuple[HistoryEntry, str]]:
    # Every word quoted: FTS5 syntax in a query (AND, NEAR, *, ") is taken literally.
    match = (" AND " if mode == "all" else " OR ").join('"' + w.replace('"', '""') + '"' for w in words)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT h.id, snippet(observations_history_fts, 0, '«', '»', '…', %s) "
            "FROM observations_history_fts JOIN observations_historyentry h ON h.id = observations_history_fts.rowid "
            "WHERE observations_history_fts MATCH %s AND h.session_id = %s ORDER BY rank LIMIT %s",
            [SNIPPET_WORDS, match, session_id, limit],
        )
        found = cursor.fetchall()
    entries = HistoryEntry.objects.in_bulk([row[0] for row in found])
    return [(entries[row_id], snippet) for row_id, snippet in found if row_id in entries]


def _postgres(session_id: int, words: list[str], mode: str, limit: int) -> list[tuple[HistoryEntry, str]]:
    query = SearchQuery(words[0], config="simple", search_type="plain")
    for word in words[1:]:
        term = SearchQuery(word, config="simple", search_type="plain")
        query = query & term if mode == "all" else query | term
    vector = SearchVector("search_text", config="simple")
    rows = (
        HistoryEntry.objects.filter(session_id=session_id)
        .annotate(vector=vector)
        .filter(vector=query)
        .annotate(
            rank=SearchRank(vector, query),
            snippet=SearchHeadline("search_text", query, config="simple", start_sel="«", stop_sel="»",
                                   max_words=SNIPPET_WORDS, min_words=6, short_word=2),
        )
        .order_by("-rank", "segment", "position")[:limit]
    )
    return [(row, row.snippet) for row in rows]


def recall_lookup(session_id: int, ref: str) -> tuple[str, str, str] | None:
    """(sha256, text, label) of what this session received or wrote under ``ref``.

    Raises ValueError when the ref is too short to tell two of its texts apart."""
    results = (
        Observation.objects.filter(session_id=session_id, blob__sha256__startswith=ref)
        .order_by("seq").values_list("blob_id", "tool", "purpose", "step")
    )
    payloads = (
        Payload.objects.filter(session_id=session_id, blob__sha256__startswith=ref)
        .order_by("pid").values_list("blob_id", "what", "path", "step")
    )
    labels: dict[str, str] = {}
    for sha, tool, purpose, step in results:
        labels.setdefault(sha, f"{purpose or tool}, step {step}")
    for sha, what, path, step in payloads:
        labels.setdefault(sha, f"{what}{' of ' + path if path else ''} you wrote, step {step}")
    if not labels:
        return None
    if len(labels) > 1:
        raise ValueError(f"ref {ref} fits {len(labels)} texts of this session; give more of its digits")
    (sha, label), = labels.items()
    return sha, blob_text(Blob.objects.get(sha256=sha)), label
