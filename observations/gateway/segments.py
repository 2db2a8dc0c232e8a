"""Segments: how a session goes on when folds cannot keep its request under the ceiling.

A new segment keeps the system prompt and tools byte for byte (the provider's cache of
them survives) and opens with the intent block, a handoff (handoff.py) and the last
step (the agent's latest turn and the results it has not answered yet). Everything
else of the old segment leaves the context but not the store: its observations are
archived (recall returns them by ref, history_search finds them) and people's words
live on, verbatim, in the handoff's decisions.

These functions are part of SessionContext (they use its parts); they are kept here so
that context.py stays about one request at a time.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from observations.gateway import receipts
from observations.gateway.context import ContextTooLarge, SessionContext
from observations.gateway.handoff import (
    PROSE_INSTRUCTIONS,
    SECTION_BUDGETS,
    Handoff,
    build_handoff,
)
from observations.gateway.ledger import ReadLedger
from observations.gateway.messages import Message, Request
from observations.gateway.payloads import apply_receipts
from observations.gateway.receipts import ref_of, render_intent_block
from observations.gateway.rendering import payload_receipt, receipt_text
from observations.gateway.tokens import estimate_request_message, estimate_tokens
from observations.gateway.transcript import RESET_FOLD, Entry, Observation, ObsState

REFERENCES_SHOWN = 10
# Results smaller than this are not worth a line among the references.
REFERENCE_MIN_TOKENS = 200


@dataclass(slots=True)
class SegmentRecord:
    number: int  # the segment this record opened
    started_step: int
    reason: str
    prose_source: str
    handoff_sizes: dict[str, int]  # bytes per section
    handoff_bytes: int
    handoff_tokens: int
    carried_messages: int  # the last step's messages carried over
    archived: list[int] = field(default_factory=list)  # obs_ids that left with the old segment
    too_large: list[int] = field(default_factory=list)  # carried results receipted to fit
    first_request_tokens: int = 0  # set when the segment's first request is assembled

    def to_json(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------ the handoff's parts
def task_summary(intent_text: str) -> str:
    """The task's title and objective, from the intent file."""
    lines = intent_text.splitlines()
    title = next((line.lstrip("# ").strip() for line in lines if line.startswith("# ")), "")
    objective: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            inside = line.startswith("## Objective")
            continue
        if inside:
            objective.append(line)
    body = "\n".join(objective).strip()
    return "\n".join(part for part in (title, body) if part)


def references(ctx: SessionContext) -> list[str]:
    """Refs of this segment's larger results and payloads, newest first, to recall."""
    lines: list[str] = []
    for obs in reversed(ctx.observations):
        if obs.alias_of is not None or obs.denied or obs.source.tokens < REFERENCE_MIN_TOKENS:
            continue
        src = obs.source
        label = f"{src.tool} {src.read.describe()}" if src.read is not None else (src.purpose or src.tool)
        lines.append(f'- recall("{ref_of(src.sha256)}"): {label} (step {obs.step}, {src.size:,} bytes)')
        if len(lines) >= REFERENCES_SHOWN:
            break
    for payload in reversed(ctx.payloads[-3:]):
        where = f" of {payload.spec.path}" if payload.spec.path else ""
        lines.append(f'- recall("{payload.ref}"): {payload.spec.what}{where} you wrote at step {payload.step}')
    if ctx.segment > 1:
        span = "1" if ctx.segment == 2 else f"1–{ctx.segment - 1}"
        lines.append(f"- earlier segments {span}: history_search(query) searches their messages, calls and results")
    lines.append(f"- segment {ctx.segment} (ending now): history_search finds it too")
    return lines


def records_prose(ctx: SessionContext) -> dict[str, str]:
    """The prose parts from records alone, when no model wrote them."""
    changed = [path for path, note in ctx.notes.files.items() if note.written]
    last = next((e.text for e in reversed(ctx.entries) if e.kind == "assistant" and e.text.strip()), "")
    progress = [f"{ctx.step} steps so far."]
    if changed:
        progress.append("Files changed: " + ", ".join(changed[-12:]) + ".")
    if last:
        progress.append("Your last words before the reset:\n" + last.strip())
    return {
        "progress": "\n".join(progress),
        "next_step": "Go on from the last step, carried below this handoff; read the files under "
        "Coordinates again before you edit them.",
    }


def stand_in_prose(ctx: SessionContext) -> dict[str, str]:
    """For the replay, which has no model to ask: the agent's own latest words, cut to
    the budgets, as a stand-in of realistic size and density for what a model writes."""
    said = [e.text.strip() for e in ctx.entries if e.kind == "assistant" and e.text.strip()]
    recent = "\n\n".join(said[-4:])
    progress = recent[-SECTION_BUDGETS["progress"] :]
    last = said[-1] if said else ""
    return {"progress": progress, "next_step": last.split("\n\n")[-1][-SECTION_BUDGETS["next_step"] :]}


def handoff_for(ctx: SessionContext, *, reason: str, prose: dict[str, str], prose_source: str) -> Handoff:
    return build_handoff(
        segment=ctx.segment + 1,
        reason=reason,
        task=task_summary(ctx.intent_text),
        files=list(ctx.notes.files.values()),
        decisions=ctx.decisions,
        verification=list(ctx.notes.checks),
        references=references(ctx),
        prose=prose,
        prose_source=prose_source,
    )


def prose_request(ctx: SessionContext) -> Request:
    """The one call that writes a handoff's prose: the conversation as it stands plus a
    question, with no output limit of ours but the window's (a reasoning model spends
    output tokens on thinking; a limit derived from the budget made such calls return
    nothing, and a provider refuses input plus max_tokens beyond the window). When the conversation no
    longer fits, every consumed result and payload is receipted in this request alone
    and the oldest exchanges are left out until it does."""
    question = Message("user", PROSE_INSTRUCTIONS.format(**SECTION_BUDGETS))
    ratio = ctx.calibration.ratio
    asked = round(estimate_request_message(question) * ratio)
    room = ctx.budget.ceiling - asked
    if ctx.projection() <= room:
        return ctx.request(extra=(question,), max_tokens=_all_the_window_leaves(ctx, ctx.projection() + asked),
                           purpose="handoff")
    messages = [_folded(ctx, entry, rendered)
                for entry, rendered in zip(ctx.entries, ctx.transcript.messages, strict=True)]
    tokens = [estimate_request_message(m) for m in messages]
    total = ctx.transcript.header_tokens + sum(tokens)
    start = 1 if ctx.entries and ctx.entries[0].kind == "intent" else 0
    keep_from = start
    # Leave out whole exchanges (a user message, or an assistant turn with its results)
    # from the oldest on; a tool message never opens what is kept.
    while round(total * ratio) > room and keep_from < len(messages) - 1:
        end = keep_from + 1
        while end < len(messages) and messages[end].role == "tool":
            end += 1
        total -= sum(tokens[keep_from:end])
        keep_from = end
    kept = tuple(messages[:start] + messages[keep_from:])
    return Request(
        model=ctx.model, system=ctx.system_prompt, tools=ctx.tools, messages=kept + (question,),
        max_tokens=_all_the_window_leaves(ctx, round(total * ratio) + asked), step=ctx.step, purpose="handoff",
    )


def _all_the_window_leaves(ctx: SessionContext, request_tokens: int) -> int:
    """No limit of ours beyond the window itself: what the request leaves of it (the
    ceiling guarantees at least the output budget)."""
    return max(ctx.budget.output_budget, ctx.budget.window - request_tokens - ctx.budget.reserve)


def _folded(ctx: SessionContext, entry: Entry, rendered: Message) -> Message:
    if entry.kind == "tool_result" and entry.observation is not None:
        obs = entry.observation
        if obs.state is ObsState.CONSUMED:
            return Message("tool", receipt_text(ctx, obs), tool_call_id=obs.call_id, tool_name=entry.tool_name)
        return rendered
    if entry.kind == "assistant":
        payloads = ctx.transcript.payloads_by_entry.get(entry.meta["index"], ())
        receipted = [(p.spec, payload_receipt(p)) for p in payloads if p.state is not ObsState.FRESH]
        text, calls = apply_receipts(entry.text, entry.tool_calls, receipted)
        return Message("assistant", text, tool_calls=calls, thinking=entry.meta.get("thinking", ()))
    return rendered


# ------------------------------------------------------------------ the reset
def start_segment(ctx: SessionContext, handoff: Handoff) -> SegmentRecord:
    """Close the current segment and open the next one with ``handoff``.

    Raises ContextTooLarge, before changing anything, if even the new segment (intent,
    handoff, the last step with its results receipted) cannot fit under the ceiling."""
    entries = ctx.entries
    last_turn = max((i for i, e in enumerate(entries) if e.kind == "assistant"), default=None)
    if last_turn is None:
        tail = [e for e in entries if e.kind not in ("intent", "intent_update", "task")]
    else:
        tail = [e for e in entries[last_turn:] if e.kind not in ("intent", "intent_update")]
    text = handoff.render()
    smallest = round(_smallest(ctx, tail, text, last_turn) * ctx.calibration.ratio)
    if smallest > ctx.budget.ceiling:
        raise ContextTooLarge(
            f"even a new segment needs about {smallest:,} tokens (intent, handoff and the last step), above the "
            f"ceiling of {ctx.budget.ceiling:,}"
        )
    carried_obs = [e.observation for e in tail if e.observation is not None]
    carried_ids = {obs.obs_id for obs in carried_obs}
    archived = [obs.obs_id for obs in ctx.observations if obs.obs_id not in carried_ids]
    for obs in ctx.observations:
        if obs.obs_id not in carried_ids:
            obs.state = ObsState.ARCHIVED
    carried_payloads = [p for p in ctx.payloads if last_turn is not None and p.entry_index == last_turn]

    ctx.obs_base = carried_obs[0].obs_id if carried_obs else ctx.obs_base + len(ctx.observations)
    ctx.payload_base = carried_payloads[0].pid if carried_payloads else ctx.payload_base + len(ctx.payloads)
    _emptied(ctx)
    ctx.transcript.append(Entry("handoff", text, step=ctx.step, pinned=True))
    for entry in tail:
        # Recorded with the segment that ended, not again; an answer keeps its thinking,
        # which an Anthropic upstream wants back with the turn that goes on.
        entry.meta = {"carried": True, **({"thinking": entry.meta["thinking"]} if "thinking" in entry.meta else {})}
        obs = entry.observation
        if obs is not None:
            if obs.alias_of is not None and ctx.observation(obs.alias_of) is None:
                obs.alias_of = None  # its target left with the old segment: serve the text
            ctx.observations.append(obs)
            if obs.source.read is not None and obs.alias_of is None and not obs.denied:
                ctx.ledger.received(obs.source.read, obs.obs_id, obs.step)
        ctx.transcript.append(entry)
        if entry.kind == "assistant" and carried_payloads:
            for payload in carried_payloads:
                payload.entry_index = entry.meta["index"]
            ctx.payloads = carried_payloads
            ctx.transcript.payloads_by_entry[entry.meta["index"]] = list(carried_payloads)

    too_large = _fit(ctx)
    _opened(ctx)
    record = SegmentRecord(
        number=ctx.segment, started_step=ctx.step, reason=handoff.reason, prose_source=handoff.prose_source,
        handoff_sizes=handoff.sizes(), handoff_bytes=len(text.encode()), handoff_tokens=estimate_tokens(text),
        carried_messages=len(tail), archived=archived, too_large=too_large,
    )
    ctx.segment_log.append(record.to_json())
    return record


def _receiptable(item) -> bool:
    return item.state is ObsState.FRESH and _tokens(item) >= 2 * REFERENCE_MIN_TOKENS


def _smallest(ctx: SessionContext, tail: list[Entry], handoff: str, last_turn: int | None) -> int:
    """Estimated tokens of the new segment with every receiptable carried item receipted."""
    total = ctx.transcript.header_tokens + estimate_request_message(Message("user", handoff))
    if ctx.intent_file_text:
        total += estimate_request_message(Message("user", render_intent_block(ctx.intent_file_text, ctx.intent_path)))
    payloads = [p for p in ctx.payloads if last_turn is not None and p.entry_index == last_turn]
    for entry in tail:
        obs = entry.observation
        if obs is not None:
            text = receipts.render_too_large(obs) if _receiptable(obs) else obs.source.text
            message = Message("tool", text, tool_call_id=obs.call_id, tool_name=entry.tool_name)
        elif entry.kind == "assistant":
            receipted = [(p.spec, payload_receipt(p)) for p in payloads if _receiptable(p)]
            message = Message("assistant", *apply_receipts(entry.text, entry.tool_calls, receipted))
        else:
            message = Message("user", entry.text)
        total += estimate_request_message(message)
    return total


def _fit(ctx: SessionContext) -> list[int]:
    """Receipt the carried results (largest first), then the carried payloads, until
    the new segment is under the ceiling (start_segment checked that it can be)."""
    too_large: list[int] = []
    items = sorted([*ctx.observations, *ctx.payloads], key=lambda i: -_tokens(i))
    for item in items:
        if ctx.projection() <= ctx.budget.ceiling:
            return too_large
        if not _receiptable(item):
            continue
        item.state, item.fold = ObsState.RECEIPTED, RESET_FOLD
        ctx.transcript.rerender(item.entry_index)
        if isinstance(item, Observation):
            too_large.append(item.obs_id)
            ctx.ledger.evicted([item.obs_id], RESET_FOLD)
    if ctx.projection() > ctx.budget.ceiling:
        raise ContextTooLarge(
            f"even a new segment needs about {ctx.projection():,} tokens (intent, handoff and the last "
            f"step), above the ceiling of {ctx.budget.ceiling:,}"
        )
    return too_large


def _tokens(item) -> int:
    return item.source.tokens if isinstance(item, Observation) else item.tokens


# ------------------------------------------------------------------ the searchable record
@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One message, call or result of an ending segment, for history_search."""

    step: int
    kind: str  # "reply", "call" (arguments as JSON), "result", or a message kind
    label: str
    ref: str  # what recall takes, when there is something to recall
    text: str
    call_id: str = ""  # calls and results: the call they belong to
    tool: str = ""


def closing_history(ctx: SessionContext) -> list[HistoryItem]:
    """The segment about to end, whole (results unfolded), in order."""
    items: list[HistoryItem] = []
    for entry in ctx.entries:
        if entry.kind in ("intent", "intent_update", "handoff") or entry.meta.get("carried"):
            continue  # carried forward anyway, or recorded with the segment before
        if entry.kind == "tool_result" and entry.observation is not None:
            src = entry.observation.source
            label = f"result of {src.tool} {src.read.describe()}" if src.read is not None else (
                f"result of {src.purpose or src.tool}")
            items.append(HistoryItem(entry.step, "result", label[:300], ref_of(src.sha256), src.text,
                                     src.call_id, src.tool))
        elif entry.kind == "assistant":
            if entry.text.strip():
                items.append(HistoryItem(entry.step, "reply", "your reply", "", entry.text))
            by_entry = ctx.transcript.payloads_by_entry.get(entry.meta["index"], ())
            payloads = {(p.spec.call_index, p.spec.key): p for p in by_entry}
            for index, call in enumerate(entry.tool_calls):
                body = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                ref = next((p.ref for (i, _), p in payloads.items() if i == index), "")
                items.append(HistoryItem(entry.step, "call", f"your call {call.name}"[:300], ref, body, call.id,
                                         call.name))
        else:
            items.append(HistoryItem(entry.step, entry.kind, _message_label(entry.kind), "", entry.text))
    return items


def _emptied(ctx: SessionContext) -> None:
    """The context with nothing of the segment that ended: the intent alone."""
    ctx.transcript.clear()
    ctx.observations, ctx.payloads = [], []
    ctx.ledger = ReadLedger()
    ctx.intent_updates = []
    ctx.book.segment_emptied()
    ctx.intent_text = ctx.intent_file_text
    if ctx.intent_text:
        ctx.transcript.append(Entry("intent", render_intent_block(ctx.intent_text, ctx.intent_path), pinned=True))


def _opened(ctx: SessionContext) -> None:
    """The counters of a segment that starts now (a new epoch: the cache prefix is new)."""
    ctx.book.epoch += 1
    ctx.segment += 1
    ctx.segment_started_step = ctx.step
    ctx.segment_requested = ""
    ctx.book.held_since_fold = 0
    ctx.book.postponements = 0
    ctx.anchor.drop()
    ctx.transcript.new_epoch()
    ctx.transcript.last_sent_len = 0


def _message_label(kind: str) -> str:
    return {"steer": "a person's steer", "chat": "a person in the room chat", "agent": "another agent's post",
            "task": "the task",
            "job": "a job's result", "nudge": "a nudge", "verify": "the room's check"}.get(kind, "a message")


def restart_segment(ctx: SessionContext, *, reason: str) -> SegmentRecord:
    """Close the current segment and open an empty one, with no handoff: the caller fills
    it with a history it was given whole (a gateway client that edited or compacted its
    own history). Every observation is archived, so the store keeps it for recall and
    nothing of the old segment's ledger gives a note against text no longer sent."""
    history = ctx.observations
    for obs in history:
        obs.state = ObsState.ARCHIVED
    ctx.obs_base += len(history)
    ctx.payload_base += len(ctx.payloads)
    _emptied(ctx)
    _opened(ctx)
    record = SegmentRecord(
        number=ctx.segment, started_step=ctx.step, reason=reason, prose_source="client", handoff_sizes={},
        handoff_bytes=0, handoff_tokens=0, carried_messages=0, archived=[obs.obs_id for obs in history],
        too_large=[],
    )
    ctx.segment_log.append(record.to_json())
    return record
