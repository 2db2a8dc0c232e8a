"""Persisting a session's gateway state: observations, ledger entries, payloads, segments
and folds. Called after every step inside the step's transaction, so what the database
holds always matches a committed step."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from django.db import transaction

from observations.blobs import blobs_put
from observations.gateway.context import SessionContext
from observations.gateway.rendering import payload_receipt
from observations.gateway.transcript import ObsState
from observations.inserts import rows_insert
from sessions.models import Fold, LedgerEntry, Observation, Payload, Segment


def args_key(tool: str, arguments: dict) -> str:
    canonical = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def range_key(path: str, start: int | None, end: int | None, content_hash: str) -> str:
    return hashlib.sha256(json.dumps([path, start, end, content_hash]).encode()).hexdigest()


@transaction.atomic(savepoint=False)  # a failure fails the caller's unit whole: no savepoint's two round trips
def observations_sync(*, session, ctx: SessionContext, touched: Mapping[str, list[int]] | None = None) -> None:
    """Bring the session's observation, payload, ledger, fold and segment rows up to
    date with ``ctx``. ``touched`` (StateJournal's Record.touched): the positions the
    unit added or changed, so that only their rows are read and written; None: all."""
    room_id = session.task.room_id
    if touched is not None:
        _sync_touched(session, room_id, ctx, touched)
        return
    rows = {o.seq: o for o in Observation.objects.filter(session=session, seq__gte=ctx.obs_base)}
    known = Observation.objects.filter(session=session).count()
    new_rows = [_observation_row(session, room_id, ctx, obs) for obs in ctx.observations if obs.obs_id >= known]
    blobs_put({obs.source.sha256: obs.source.text for obs in ctx.observations if obs.obs_id >= known})
    changed = []
    for obs in ctx.observations:
        row = rows.get(obs.obs_id)
        if row is not None and _refreshed(row, ctx, obs):
            changed.append(row)
    Observation.objects.bulk_create(new_rows)
    Observation.objects.bulk_update(changed, SYNCED_FIELDS, batch_size=UPDATE_BATCH)
    # Everything before this segment's first observation left with an earlier segment.
    Observation.objects.filter(session=session, seq__lt=ctx.obs_base).exclude(
        state=Observation.State.ARCHIVED).update(state=Observation.State.ARCHIVED)
    _sync_payloads(session, room_id, ctx)
    _sync_ledger(session, ctx)
    _sync_folds(session, ctx)
    _sync_segments(session, ctx)


def _sync_touched(session, room_id: int, ctx: SessionContext, touched: Mapping[str, list[int]]) -> None:
    """One unit's rows: new and changed observations, payloads, ledger entries and folds,
    each kind in one statement that inserts the new rows and updates the changed ones
    (nothing read first: the journal knows what the unit touched). What only a segment
    start changes (archiving, ranges leaving the ledger) comes with a snapshot the
    journal could not follow the unit to (every segment start is one), which syncs
    everything."""
    observations = [ctx.observations[i] for i in touched["observations"]]
    payloads = [ctx.payloads[i] for i in touched["payloads"]]
    blobs_put({**{o.source.sha256: o.source.text for o in observations},
               **{p.sha256: p.spec.text for p in payloads}})
    rows_insert(Observation, [_observation_row(session, room_id, ctx, obs) for obs in observations],
                unique_fields=["session", "seq"], update_fields=SYNCED_FIELDS)
    rows_insert(Payload, [_payload_row(session, room_id, ctx, p) for p in payloads],
                unique_fields=["session", "pid"], update_fields=["state", "fold_number", "receipt_text"])
    if touched["ledger"]:
        entries = list(ctx.ledger)
        rows_insert(LedgerEntry, [_ledger_row(session, entries[i]) for i in touched["ledger"]],
                    unique_fields=["session", "range_key"], update_fields=list(LEDGER_FIELDS))
    rows_insert(Fold, [_fold_row(session, ctx.folds[i]) for i in touched["folds"]])  # only ever added
    if touched["segment_log"]:
        _sync_segments(session, ctx)


SYNCED_FIELDS = ["state", "fold_number", "alias_of_seq", "reread_of_seq", "served", "receipt_text"]
# Rows per UPDATE: a statement binds at most 65,535 values on the server (a fold of a
# long session changes thousands of rows, each a dozen values).
UPDATE_BATCH = 1_000


def _refreshed(row: Observation, ctx: SessionContext, obs) -> bool:
    """``row`` brought up to ``obs`` (folded, or a note that a fold served as text after
    all); whether anything changed."""
    now = (obs.state.value, obs.fold, obs.alias_of, obs.reread_of, _served(obs))
    if (row.state, row.fold_number, row.alias_of_seq, row.reread_of_seq, row.served) == now:
        return False
    row.state, row.fold_number, row.alias_of_seq, row.reread_of_seq, row.served = now
    row.receipt_text = _receipt(ctx, obs)
    return True


def _observation_row(session, room_id: int, ctx: SessionContext, obs) -> Observation:
    src = obs.source
    return Observation(
        room_id=room_id, session=session, seq=obs.obs_id, step=obs.step, segment=obs.segment, call_id=src.call_id,
        tool=src.tool, arguments=src.arguments, args_key=args_key(src.tool, src.arguments),
        purpose=src.purpose[:300], path=src.read.path if src.read else "",
        line_start=src.read.start if src.read else None, line_end=src.read.end if src.read else None,
        content_hash=src.read.content_hash if src.read else "", file_fingerprint=src.file_fingerprint,
        blob_id=src.sha256, size=src.size, token_estimate=src.tokens,
        state=obs.state.value, fold_number=obs.fold, alias_of_seq=obs.alias_of, reread_of_seq=obs.reread_of,
        served=_served(obs), receipt_text=_receipt(ctx, obs),
    )


def _sync_payloads(session, room_id: int, ctx: SessionContext) -> None:
    rows = {p.pid: p for p in Payload.objects.filter(session=session, pid__gte=ctx.payload_base)}
    new, changed = [], []
    for payload in ctx.payloads:
        row = rows.get(payload.pid)
        if row is None:
            new.append(payload)
        elif row.state != payload.state.value or row.fold_number != payload.fold:
            row.state, row.fold_number = payload.state.value, payload.fold
            row.receipt_text = _payload_receipt(payload)
            changed.append(row)
    blobs_put({p.sha256: p.spec.text for p in new})
    Payload.objects.bulk_create([_payload_row(session, room_id, ctx, p) for p in new])
    Payload.objects.bulk_update(changed, ["state", "fold_number", "receipt_text"], batch_size=UPDATE_BATCH)
    Payload.objects.filter(session=session, pid__lt=ctx.payload_base).exclude(
        state=Observation.State.ARCHIVED).update(state=Observation.State.ARCHIVED)


def _payload_row(session, room_id: int, ctx: SessionContext, payload) -> Payload:
    spec = payload.spec
    return Payload(room_id=room_id, session=session, pid=payload.pid, segment=ctx.segment, step=payload.step,
                   what=spec.what[:60], path=spec.path[:500], blob_id=payload.sha256, size=payload.size,
                   state=payload.state.value, fold_number=payload.fold, receipt_text=_payload_receipt(payload))


def _payload_receipt(payload) -> str:
    return payload_receipt(payload) if payload.state is ObsState.RECEIPTED else ""


def _sync_segments(session, ctx: SessionContext) -> None:
    """One row per reset. The handoff text is the newest segment's own opening message:
    a unit starts at most one segment, and this runs in the unit that started it."""
    recorded = {s.number: s for s in Segment.objects.filter(session=session)}
    for record in ctx.segment_log:
        row = recorded.get(record["number"])
        if row is None:
            # A segment a gateway client's changed history started has none.
            handoff = next((e.text for e in ctx.entries if e.kind == "handoff"), "")
            Segment.objects.create(
                session=session, number=record["number"], started_step=record["started_step"],
                reason=record["reason"][:2000], prose_source=record["prose_source"], handoff=handoff,
                handoff_sizes=record["handoff_sizes"], handoff_bytes=record["handoff_bytes"],
                handoff_tokens=record["handoff_tokens"], first_request_tokens=record["first_request_tokens"],
                archived=len(record["archived"]),
            )
        elif row.first_request_tokens != record["first_request_tokens"]:
            row.first_request_tokens = record["first_request_tokens"]
            row.save(update_fields=["first_request_tokens"])


def _receipt(ctx: SessionContext, obs) -> str:
    """The receipt the model sees for a folded-out result, exactly as sent (kept, since
    the receipt's wording may change with later versions of the gateway)."""
    return ctx.served_text(obs) if obs.state is ObsState.RECEIPTED else ""


def _served(obs) -> str:
    if obs.alias_of is not None:
        return Observation.Served.NOTE
    if obs.reread_of is not None:
        return Observation.Served.REREAD
    return Observation.Served.TEXT


LEDGER_FIELDS = ("observation_seq", "received_step", "in_context", "evicted_by_fold", "times_served",
                 "changed_step")


def _ledger_row(session, entry) -> LedgerEntry:
    rng = entry.range
    return LedgerEntry(session=session, range_key=range_key(rng.path, rng.start, rng.end, rng.content_hash),
                       path=rng.path, line_start=rng.start, line_end=rng.end, content_hash=rng.content_hash,
                       observation_seq=entry.obs_id, received_step=entry.received_step, in_context=entry.in_context,
                       evicted_by_fold=entry.evicted_by_fold, times_served=entry.times_served,
                       changed_step=entry.changed_step)


def _sync_ledger(session, ctx: SessionContext) -> None:
    """The whole ledger, and ranges that left it."""
    rows = [_ledger_row(session, entry) for entry in ctx.ledger]
    LedgerEntry.objects.bulk_create(rows, update_conflicts=True, unique_fields=["session", "range_key"],
                                    update_fields=list(LEDGER_FIELDS))
    # Ranges of an ended segment are not in the context any more.
    LedgerEntry.objects.filter(session=session, in_context=True).exclude(
        range_key__in=[row.range_key for row in rows]).update(in_context=False)


def _fold_row(session, fold) -> Fold:
    return Fold(session=session, number=fold.number, step=fold.step, epoch=fold.epoch, reason=fold.reason.value,
                postponements=fold.postponements, projection_before=fold.projection_before,
                projection_after=fold.projection_after, tokens_freed=fold.tokens_freed, evicted=list(fold.evicted))


def _sync_folds(session, ctx: SessionContext) -> None:
    recorded = Fold.objects.filter(session=session).count()
    Fold.objects.bulk_create(_fold_row(session, f) for f in ctx.folds[recorded:])
