"""Starting a new segment from the step loop: one prose call, then the reset.

The handoff's records come from the gateway (observations/gateway/segments.py); the
model writes only the prose, in one call with no output limit of ours. If that call
fails in any way, the prose comes from records and the session goes on.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from agents.providers import CallRecord, ProviderError
from observations.gateway import segments
from observations.gateway.context import SessionContext
from observations.gateway.handoff import parse_prose
from observations.gateway.segments import HistoryItem

if TYPE_CHECKING:
    from sessions.runtime.ports import ModelPort


class SegmentStarter:
    def __init__(self, ctx: SessionContext, host: ModelPort) -> None:
        self.ctx, self.host = ctx, host
        self._closed: tuple[int, list[HistoryItem]] | None = None

    def start(self, reason: str, records: list[CallRecord]) -> None:
        ctx, host = self.ctx, self.host
        ending = ctx.segment
        history = segments.closing_history(ctx)
        prose, source = self._prose(records)
        handoff = segments.handoff_for(ctx, reason=reason, prose=prose, prose_source=source)
        before = ctx.projection()
        record = segments.start_segment(ctx, handoff)
        text = handoff.render()
        self._closed = (ending, history)
        host.emit("segment.started", {
            "segment": record.number, "step": record.started_step, "reason": reason, "prose": source,
            "sizes": record.handoff_sizes, "handoff_bytes": record.handoff_bytes,
            "handoff_tokens": record.handoff_tokens, "archived": len(record.archived),
            "too_large": record.too_large, "handoff": text,
            "projection_before": before, "tokens_freed": max(0, before - ctx.projection()),
        })

    def take_closed(self) -> tuple[int, list[HistoryItem]] | None:
        closed, self._closed = self._closed, None
        return closed

    def _prose(self, records: list[CallRecord]) -> tuple[dict[str, str], str]:
        try:
            completion = self.host.call_model(segments.prose_request(self.ctx))
        except ProviderError as exc:
            if exc.record is not None:
                records.append(dataclasses.replace(exc.record, purpose="handoff"))
            self.host.emit("segment.prose_failed", {"error": str(exc)[:500]})
            return segments.records_prose(self.ctx), "records"
        records.append(dataclasses.replace(completion.record, purpose="handoff"))
        prose = parse_prose(completion.turn.text)
        if not any(prose.values()):
            return segments.records_prose(self.ctx), "records"
        return prose, "model"
