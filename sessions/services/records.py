"""Writes of what a session's step produced: provider calls with their cost, the unit's
ledger records, and the cached analysis."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from agents.providers import CallRecord
from observations.blobs import blobs_put, sha256_text
from observations.calibration import calibration_save
from observations.gateway.context import SessionContext
from observations.gateway.messages import Usage
from observations.inserts import rows_insert
from sessions.events import session_events_append
from sessions.ledger.sync import observations_sync
from sessions.models import (
    ProviderCall,
    Session,
)


def _provider_call_row(*, session: Session, step: int, record: CallRecord) -> ProviderCall:
    """One model call as the provider reported it, priced at the agent's prices. A
    refused call (an error, no usage) is not billed; an answer without reported usage
    has an unknown cost, never a guessed one."""
    usage = Usage(input_tokens=record.input_tokens, cached_input_tokens=record.cached_input_tokens,
                  cache_write_tokens=record.cache_write_tokens, output_tokens=record.output_tokens,
                  reasoning_tokens=record.reasoning_tokens)
    if record.usage_reported:
        cost = session.agent.price_for(record.model).cost(usage)
    else:
        cost = Decimal(0) if record.error else None
    return ProviderCall(
        session=session, step=step, model=record.model, input_tokens=record.input_tokens,
        cached_input_tokens=record.cached_input_tokens, cache_write_tokens=record.cache_write_tokens,
        output_tokens=record.output_tokens, reasoning_tokens=record.reasoning_tokens,
        latency_ms=record.latency_ms, prefix_hash=record.prefix_hash, projected_tokens=record.projected_tokens,
        prefix=record.prefix, cost_usd=cost, error=record.error or "", purpose=record.purpose,
        request_sha256=sha256_text(record.request) if record.request else "",
    )


def unit_records_save(*, session: Session, ctx: SessionContext, touched, fields: list[str],
                      call_records: Iterable[CallRecord], events: list[tuple[str, dict[str, Any]]]) -> None:
    """What every unit of a session writes, a worker's or the gateway endpoint's (in its
    transaction): the step, the tokens and model calls, the session's ``fields`` with the
    unit's ``events``, the observation rows of what the unit ``touched`` (a StateJournal
    record's) and the model's calibration. A statement per kind of row, however many
    rows: the hub's cost of a step."""
    session.step = ctx.step
    records, calls = list(call_records), []
    for record in records:
        session.tokens_input += record.input_tokens
        session.tokens_cached += record.cached_input_tokens
        session.tokens_output += record.output_tokens
        calls.append(_provider_call_row(session=session, step=ctx.step, record=record))
    blobs_put({call.request_sha256: record.request for call, record in zip(calls, records, strict=True)
               if record.request})
    rows_insert(ProviderCall, calls)
    session_events_append(session, events, fields=fields)
    observations_sync(session=session, ctx=ctx, touched=touched)
    calibration_save(ctx.calibration)


def session_analysis_refresh(session: Session, *, loaded: bool = False) -> dict:
    """The session's stored trace analysis, recomputed first if its event log grew since
    (a derived cache: room and agent totals add these up instead of re-reading every log).
    ``loaded``: ``session`` was just read with its analysis columns, so they need not be
    read again (a room's totals read them for all its sessions in one query)."""
    from sessions.analysis.selectors import session_facts
    from sessions.analysis.trace import analyze

    if loaded:
        seq, stored, stored_seq = session.last_event_seq, session.analysis, session.analysis_seq
    else:
        seq, stored, stored_seq = Session.objects.values_list("last_event_seq", "analysis", "analysis_seq").get(
            pk=session.pk)
    if stored and stored_seq == seq:
        return stored
    data = analyze(session_facts(session)).to_dict()
    # Events appended meanwhile are in `data` too; labelled with the older seq, it is
    # simply recomputed next time.
    Session.objects.filter(pk=session.pk, analysis_seq__lte=seq).update(analysis=data, analysis_seq=seq)
    session.analysis, session.analysis_seq = data, seq
    return data


def sessions_analysis_totals(sessions) -> dict:
    """Totals of the trace analyses of ``sessions`` (a room's, an agent's)."""
    from sessions.analysis.trace import add_up

    sessions = sessions.select_related("task", "task__room", "agent").defer(*Session.STATE_FIELDS)
    return add_up([session_analysis_refresh(s, loaded=True) for s in sessions])
