"""Reads for the observation ledger review page and the room page's shared-store panel."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import connection
from django.db.models import Count, Q, Sum

from observations.gateway.economics import CacheEconomics
from observations.gateway.prices import MILLION, ModelPrice, format_usd
from sessions.ledger.state_store import session_gateway_state
from sessions.models import Fold, Observation, Payload, Segment


@dataclass(frozen=True)
class LedgerRow:
    observation: Observation

    @property
    def range_label(self) -> str:
        o = self.observation
        if not o.path:
            return ""
        if o.line_start is None and o.line_end is None:
            return o.path
        return f"{o.path}:{o.line_start or 1}-{o.line_end if o.line_end is not None else 'end'}"

    @property
    def saw_a_receipt(self) -> bool:
        """The model was shown this result's receipt at some point: it stands, or its
        segment ended after the fold (archived, the receipt text kept)."""
        o = self.observation
        return o.state == Observation.State.RECEIPTED or bool(o.receipt_text)

    @property
    def state_label(self) -> str:
        o = self.observation
        if o.state == Observation.State.ARCHIVED:
            label = f"archived with segment {o.segment}"
        elif o.state == Observation.State.RECEIPTED:
            label = f"receipted at fold {o.fold_number}" if o.fold_number else "receipted: too large for a new segment"
        elif o.served == Observation.Served.NOTE:
            label = f"note → #{o.alias_of_seq}"
        else:
            label = "in context"
        if o.served == Observation.Served.REREAD:
            label += f" · re-served (was #{o.reread_of_seq})"
        return label


@dataclass(frozen=True)
class LedgerTotals:
    observations: int
    tokens_observed: int
    tokens_sent: int
    tokens_saved: int
    receipts: int
    rereads: int
    notes: int
    folds: int


@dataclass(frozen=True)
class SegmentGroup:
    number: int
    segment: Segment | None  # the reset that opened it (None for the first)
    rows: list[LedgerRow]
    payloads: list[Payload]


def session_ledger(session) -> tuple[list[SegmentGroup], list[Fold], LedgerTotals]:
    observations = Observation.objects.filter(session=session).only(
        "seq", "step", "segment", "call_id", "tool", "purpose", "path", "line_start", "line_end", "size",
        "token_estimate", "blob_id", "state", "served", "fold_number", "alias_of_seq", "reread_of_seq",
        "receipt_text",
    )
    folds = list(Fold.objects.filter(session=session))
    agg = Observation.objects.filter(session=session).aggregate(
        n=Count("id"),
        tokens=Sum("token_estimate"),
        receipts=Count("id", filter=Q(state=Observation.State.RECEIPTED)),
        rereads=Count("id", filter=Q(served=Observation.Served.REREAD)),
        notes=Count("id", filter=Q(served=Observation.Served.NOTE)),
    )
    scalars = session_gateway_state(session).get("scalars", {})
    totals = LedgerTotals(
        observations=agg["n"],
        tokens_observed=agg["tokens"] or 0,
        tokens_sent=scalars.get("sent_tokens_total", 0),
        tokens_saved=scalars.get("saved_tokens_total", 0),
        receipts=agg["receipts"],
        rereads=agg["rereads"],
        notes=agg["notes"],
        folds=len(folds),
    )
    segments = {s.number: s for s in Segment.objects.filter(session=session)}
    rows_by: dict[int, list[LedgerRow]] = {}
    for o in observations:
        rows_by.setdefault(o.segment, []).append(LedgerRow(o))
    payloads_by: dict[int, list[Payload]] = {}
    for p in Payload.objects.filter(session=session):
        payloads_by.setdefault(p.segment, []).append(p)
    numbers = sorted(set(rows_by) | set(payloads_by) | set(segments) | {1})
    groups = [SegmentGroup(n, segments.get(n), rows_by.get(n, []), payloads_by.get(n, [])) for n in numbers]
    return groups, folds, totals


@dataclass(frozen=True)
class FoldSavings:
    """What one fold has kept out of the requests sent after it."""

    fold: Fold
    requests_since: int  # requests sent after the fold (the fold's own included)
    tokens_kept_out: int  # tokens_freed on each of them
    saved_usd: Decimal | None  # those tokens at the cache-read price (None: no price)
    payback_requests: float  # requests the fold needs to pay for its cache rewrite

    @property
    def saved_label(self) -> str:
        return format_usd(self.saved_usd)

    @property
    def paid_back(self) -> bool:
        return self.requests_since - 1 >= self.payback_requests

    @property
    def payback_label(self) -> str:
        if self.payback_requests == float("inf"):
            return "never (freed nothing)"
        return f"{max(0.0, self.payback_requests):,.1f} requests"


def fold_savings(folds: list[Fold], request_steps: list[int], price: ModelPrice) -> list[FoldSavings]:
    """Per fold: the requests since (a fold at step s precedes the request of step s+1),
    the tokens it kept out of them, and that at the price of a cached read, which is
    what those tokens would have cost had they stayed."""
    prices = price.per_million()
    economics = CacheEconomics.of(price)
    result = []
    for fold in folds:
        since = sum(1 for step in request_steps if step > fold.step)
        kept_out = max(0, fold.tokens_freed) * since
        saved = kept_out * prices["cached_input"] / MILLION if prices else None
        result.append(FoldSavings(fold, since, kept_out, saved,
                                  economics.payback_requests(fold.projection_after, fold.tokens_freed)))
    return result


@dataclass(frozen=True)
class StoreSavings:
    """What a room's content-addressed store saved across its sessions: aggregate
    figures for people on the room page, never part of any model request.

    A blob is *stored* by the room's first observation that refers to it (the lowest
    id); every other session's observations of the same bytes are *shared reads*.
    """

    observations: int = 0
    sessions: int = 0
    observed_bytes: int = 0  # every result stored apart
    per_session_bytes: int = 0  # each session storing its own distinct results
    stored_bytes: int = 0  # each distinct result once: what the store holds
    shared_reads: int = 0  # observations of bytes another session stored first
    shared_read_bytes: int = 0

    @property
    def saved_bytes(self) -> int:
        return self.observed_bytes - self.stored_bytes

    @property
    def saved_across_sessions(self) -> int:
        return self.per_session_bytes - self.stored_bytes


def store_savings_of(rows) -> StoreSavings:
    """The same figures from plain ``(observation id, session id, blob sha256, size)``
    rows: the definition ``room_store_savings`` computes in one query (tests compare)."""
    first: dict[str, tuple[int, object]] = {}
    pairs: dict[tuple[object, str], int] = {}
    rows = sorted(rows, key=lambda r: r[0])
    for obs_id, session_id, blob, size in rows:
        first.setdefault(blob, (obs_id, session_id))
        pairs[(session_id, blob)] = size
    shared = [(s, b, size) for _, s, b, size in rows if first[b][1] != s]
    return StoreSavings(
        observations=len(rows),
        sessions=len({r[1] for r in rows}),
        observed_bytes=sum(r[3] for r in rows),
        per_session_bytes=sum(pairs.values()),
        stored_bytes=sum(pairs[(s, b)] for b, (_, s) in first.items()),
        shared_reads=len(shared),
        shared_read_bytes=sum(size for _, _, size in shared),
    )


# One pass over the room's observations (index room_store: room, blob, session, id,
# size, so PostgreSQL answers it from the index alone). An observation's size is its
# blob's (both are the UTF-8 length of the same text), so no join with blobs is needed.
STORE_SAVINGS_SQL = """
WITH pairs AS (
    SELECT blob_id, session_id, MIN(id) AS first_id, COUNT(*) AS n, MAX(size) AS size, SUM(size) AS total
    FROM {table} WHERE room_id = %s GROUP BY blob_id, session_id
), ranked AS (
    SELECT session_id, n, size, total, ROW_NUMBER() OVER (PARTITION BY blob_id ORDER BY first_id) AS storer
    FROM pairs
)
SELECT
    COALESCE(SUM(n), 0),
    COUNT(DISTINCT session_id),
    COALESCE(SUM(total), 0),
    COALESCE(SUM(size), 0),
    COALESCE(SUM(CASE WHEN storer = 1 THEN size ELSE 0 END), 0),
    COALESCE(SUM(CASE WHEN storer = 1 THEN 0 ELSE n END), 0),
    COALESCE(SUM(CASE WHEN storer = 1 THEN 0 ELSE total END), 0)
FROM ranked
"""


def room_store_savings(room_id: int) -> StoreSavings:
    """The room's store savings (StoreSavings), in one aggregate query."""
    with connection.cursor() as cursor:
        cursor.execute(STORE_SAVINGS_SQL.format(table=connection.ops.quote_name(Observation._meta.db_table)),
                       [room_id])
        row = cursor.fetchone()
    return StoreSavings(*(int(value) for value in row))
