"""Persisting a session's gateway state: observations, ledger entries, payloads, segments
and folds. Called after every step inside the step's transaction, so what the database
holds always matches a committed step."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from django.db import transaction

from observations.blobs import blob_put
from observations.gateway.context import SessionContext
from observations.gateway.rendering import payload_receipt
from observations.gateway.transcript import ObservationInput, ObsState
from observations.models import Blob
from sessions.models import Fold, LedgerEntry, Observation, Payload, Segment


def args_key(tool: str, arguments: dict) -> str:
    canonical = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def range_key(path: str, start: int | None, end: int | None, content_hash: str) -> str:
    return hashlib.sha256(json.dumps([path, start, end, content_hash]).encode()).hexdigest()


def room_cache_lookup(*, room_id: int, source: ObservationInput) -> Blob | None:
    """A blob some session of this room already stored for the same call on the same
    file content. It saves storing and re-running; whether the model gets text or a
    receipt is never decided here, only by the session's ledger."""
    if not source.file_fingerprint:
        return None
    row = (
        Observation.objects.filter(
            room_id=room_id,
            tool=source.tool,
            args_key=args_key(source.tool, source.arguments),
            file_fingerprint=source.file_fingerprint,
        )
        .select_related("blob")
        .first()
    )
    return row.blob if row else None


@transaction.atomic
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
    changed = []
    for obs in ctx.observations:
        row = rows.get(obs.obs_id)
        if row is not None and _refreshed(row, ctx, obs):
            changed.append(row)
    Observation.objects.bulk_create(new_rows)
    Observation.objects.bulk_update(changed, SYNCED_FIELDS)
    # Everything before this segment's first observation left with an earlier segment.
    Observation.objects.filter(session=session, seq__lt=ctx.obs_base).exclude(
        state=Observation.State.ARCHIVED).update(state=Observation.State.ARCHIVED)
    _sync_payloads(session, room_id, ctx)
    _sync_ledger(session, ctx)
    _sync_folds(session, ctx)
    _sync_segments(session, ctx)


def _sync_touched(session, room_id: int, ctx: SessionContext, touched: Mapping[str, list[int]]) -> None:
    """One unit's rows: new and changed observations, payloads, ledger entries and folds.
    What only a segment start changes (archiving, ranges leaving the ledger) comes with
    a snapshot, which syncs everything."""
    observations = [ctx.observations[i] for i in touched["observations"]]
    rows = {o.seq: o for o in Observation.objects.filter(session=session, seq__in=[o.obs_id for o in observations])}
    new, changed = [], []
    for obs in observations:
        row = rows.get(obs.obs_id)
        if row is None:
            new.append(_observation_row(session, room_id, ctx, obs))
        elif _refreshed(row, ctx, obs):
            changed.append(row)
    Observation.objects.bulk_create(new)
    Observation.objects.bulk_update(changed, SYNCED_FIELDS)
    _sync_payloads(session, room_id, ctx, [ctx.payloads[i] for i in touched["payloads"]])
    if touched["ledger"]:
        entries = list(ctx.ledger)
        _sync_ledger(session, ctx, [entries[i] for i in touched["ledger"]])
    if touched["folds"]:
        _sync_folds(session, ctx)
    if touched["segment_log"]:
        _sync_segments(session, ctx)


SYNCED_FIELDS = ["state", "fold_number", "alias_of_seq", "reread_of_seq", "served", "receipt_text"]


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
        blob=_blob_for(room_id, src), size=src.size, token_estimate=src.tokens,
        state=obs.state.value, fold_number=obs.fold, alias_of_seq=obs.alias_of, reread_of_seq=obs.reread_of,
        served=_served(obs), receipt_text=_receipt(ctx, obs),
    )


def _sync_payloads(session, room_id: int, ctx: SessionContext, payloads=None) -> None:
    if payloads is None:
        rows = {p.pid: p for p in Payload.objects.filter(session=session, pid__gte=ctx.payload_base)}
    else:
        rows = {p.pid: p for p in Payload.objects.filter(session=session, pid__in=[p.pid for p in payloads])}
    new, changed = [], []
    for payload in ctx.payloads if payloads is None else payloads:
        row = rows.get(payload.pid)
        if row is None:
            spec = payload.spec
            new.append(Payload(
                room_id=room_id, session=session, pid=payload.pid, segment=ctx.segment, step=payload.step,
                what=spec.what[:60], path=spec.path[:500], blob=blob_put(spec.text, sha256=payload.sha256),
                size=payload.size, state=payload.state.value, fold_number=payload.fold,
            ))
        elif row.state != payload.state.value or row.fold_number != payload.fold:
            row.state, row.fold_number = payload.state.value, payload.fold
            row.receipt_text = payload_receipt(payload) if payload.state is ObsState.RECEIPTED else ""
            changed.append(row)
    Payload.objects.bulk_create(new)
    Payload.objects.bulk_update(changed, ["state", "fold_number", "receipt_text"])
    if payloads is not None:
        return
    Payload.objects.filter(session=session, pid__lt=ctx.payload_base).exclude(
        state=Observation.State.ARCHIVED).update(state=Observation.State.ARCHIVED)


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


def _blob_for(room_id: int, source: ObservationInput) -> Blob:
    cached = room_cache_lookup(room_id=room_id, source=source)
    if cached is not None and cached.sha256 == source.sha256:
        return cached  # an unchanged read this room stored before: nothing to hash or write
    return blob_put(source.text, sha256=source.sha256)


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


def _sync_ledger(session, ctx: SessionContext, entries=None) -> None:
    """``entries``: only these (a unit's); None: the whole ledger, and ranges that left it."""
    keys = [(range_key(e.range.path, e.range.start, e.range.end, e.range.content_hash), e)
            for e in (ctx.ledger if entries is None else entries)]
    existing = LedgerEntry.objects.filter(session=session)
    if entries is not None:
        existing = existing.filter(range_key__in=[key for key, _ in keys])
    existing = {e.range_key: e for e in existing}
    new, changed = [], []
    fields = ("observation_seq", "received_step", "in_context", "evicted_by_fold", "times_served", "changed_step")
    for key, entry in keys:
        rng = entry.range
        values = dict(zip(fields, (entry.obs_id, entry.received_step, entry.in_context,
                                   entry.evicted_by_fold, entry.times_served, entry.changed_step), strict=True))
        row = existing.get(key)
        if row is None:
            new.append(LedgerEntry(session=session, range_key=key, path=rng.path, line_start=rng.start,
                                   line_end=rng.end, content_hash=rng.content_hash, **values))
        elif any(getattr(row, f) != v for f, v in values.items()):
            for f, v in values.items():
                setattr(row, f, v)
            changed.append(row)
    LedgerEntry.objects.bulk_create(new)
    LedgerEntry.objects.bulk_update(changed, list(fields))
    if entries is not None:
        return
    # Ranges of an ended segment are not in the context any more.
    current = {key for key, _ in keys}
    LedgerEntry.objects.filter(session=session, in_context=True).exclude(range_key__in=current).update(
        in_context=False)


def _sync_folds(session, ctx: SessionContext) -> None:
    recorded = Fold.objects.filter(session=session).count()
    Fold.objects.bulk_create(
        Fold(
            session=session, number=f.number, step=f.step, epoch=f.epoch, reason=f.reason.value,
            postponements=f.postponements, projection_before=f.projection_before,
            projection_after=f.projection_after, tokens_freed=f.tokens_freed, evicted=list(f.evicted),
        )
        for f in ctx.folds[recorded:]
    )
