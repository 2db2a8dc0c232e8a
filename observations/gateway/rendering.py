"""A session's transcript as its request holds it: each entry rendered once into its
message, with the message's estimated tokens. Within an epoch the request is
append-only: only a fold or a new segment re-renders an entry already there."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from observations.gateway import receipts
from observations.gateway.messages import Message
from observations.gateway.payloads import Payload, apply_receipts
from observations.gateway.tokens import estimate_request_message
from observations.gateway.transcript import RESET_FOLD, Entry, Observation, ObsState

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext


class RenderedTranscript:
    def __init__(self, render: Callable[[Entry], Message], header_tokens: int) -> None:
        self.render = render  # entry -> the message the request holds for it now
        self.header_tokens = header_tokens  # system prompt and tool table
        self.entries: list[Entry] = []
        self.messages: list[Message] = []  # one per entry
        self.tokens: list[int] = []  # estimated, one per message
        self.estimate = header_tokens  # raw estimate of the request as it stands
        self.payloads_by_entry: dict[int, list[Payload]] = {}
        # Where the provider's cached prefix may end (see Request.stable_prefix_end and
        # reuse_prefix_end), and how many messages the request sent last had.
        self.stable_prefix_end = -1
        self.reuse_prefix_end = -1
        self.last_sent_len = 0

    def append(self, entry: Entry) -> Entry:
        message = self.render(entry)
        tokens = estimate_request_message(message)
        self.entries.append(entry)
        self.messages.append(message)
        self.tokens.append(tokens)
        self.estimate += tokens
        entry.meta["index"] = len(self.entries) - 1
        if entry.observation is not None:
            entry.observation.entry_index = len(self.entries) - 1
        return entry

    def rerender(self, index: int) -> int:
        """Render entry ``index`` again; return the estimated tokens it freed."""
        message = self.render(self.entries[index])
        tokens = estimate_request_message(message)
        freed = self.tokens[index] - tokens
        self.messages[index], self.tokens[index] = message, tokens
        self.estimate -= freed
        return freed

    def sent(self, first_changed: int | None) -> None:
        """The request as it stands is about to leave; a fold changed it from
        ``first_changed`` on (None: nothing changed since the request sent before)."""
        unchanged = self.last_sent_len if first_changed is None else min(self.last_sent_len, first_changed)
        self.reuse_prefix_end, self.last_sent_len = unchanged - 1, len(self.messages)

    def new_epoch(self) -> None:
        """A fold or a new segment changed the request: what stands now is the stable prefix."""
        self.stable_prefix_end = len(self.messages) - 1

    def clear(self) -> None:
        """Nothing of the segment that ended."""
        self.entries, self.messages, self.tokens, self.payloads_by_entry = [], [], [], {}
        self.estimate = self.header_tokens


def render_entry(ctx: SessionContext, entry: Entry) -> Message:
    """The message the request holds for ``entry`` now."""
    if entry.kind == "assistant":
        payloads = ctx.transcript.payloads_by_entry.get(entry.meta.get("index", len(ctx.entries)), ())
        receipted = [(p.spec, payload_receipt(p)) for p in payloads if p.state is ObsState.RECEIPTED]
        text, calls = apply_receipts(entry.text, entry.tool_calls, receipted)
        return Message("assistant", text, tool_calls=calls, thinking=entry.meta.get("thinking", ()))
    if entry.kind == "tool_result":
        obs = entry.observation
        assert obs is not None
        return Message("tool", shown_text(ctx, obs), tool_call_id=obs.call_id, tool_name=entry.tool_name)
    return Message("user", entry.text)


def shown_text(ctx: SessionContext, obs: Observation) -> str:
    """A result as the request shows it: its text, a note, a receipt or a refusal."""
    if obs.denied:
        return ctx.serving.gate.denial(obs)
    if obs.state is ObsState.RECEIPTED:
        if obs.fold == RESET_FOLD:
            return receipts.render_too_large(obs)
        return receipt_text(ctx, obs)
    if obs.alias_of is not None:
        target = ctx.observation(obs.alias_of)
        if target is None or target.state is ObsState.RECEIPTED:
            return receipts.render_alias_receipt(obs)
        return receipts.render_note(obs, target)
    return obs.source.text


def receipt_text(ctx: SessionContext, obs: Observation) -> str:
    if obs.alias_of is not None:
        return receipts.render_alias_receipt(obs)
    return (ctx.serving.receipt or receipts.render_receipt)(obs)


def payload_receipt(payload: Payload) -> str:
    spec = payload.spec
    return receipts.render_payload_receipt(ref=payload.ref, what=spec.what, path=spec.path, size=payload.size,
                                           text=spec.text)
