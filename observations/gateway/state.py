"""SessionContext to and from plain JSON, so another worker can resume a session.

Tool result texts are not in the state: they live in the blob store, keyed by
SHA-256, and come back through ``texts``. Rendering is a pure function of the state,
so a restored context sends byte-for-byte the request the original would have sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from observations.gateway.budget import Budget, Calibration
from observations.gateway.context import SessionContext
from observations.gateway.decisions import Decisions
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.folds import FoldRecord
from observations.gateway.handoff import FileNote
from observations.gateway.ledger import LedgerEntry
from observations.gateway.messages import ToolCall, ToolSchema
from observations.gateway.payloads import Payload, PayloadSpec
from observations.gateway.policies import FoldReason, Policy
from observations.gateway.receipts import INTENT_UPDATE_FOLDED
from observations.gateway.tokens import estimate_header
from observations.gateway.transcript import (
    Entry,
    FileRange,
    Observation,
    ObservationInput,
    ObsState,
)

STATE_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: before payloads and segments

# Each saved scalar by its key in the saved state (the keys of sessions saved before the
# context was split into its parts) and where it lives now: the context itself, or one
# of its parts (anchor.TokenAnchor, folds.FoldBook, rendering.RenderedTranscript,
# worknotes.WorkNotes).
_PLACES = {
    "step": ("", "step"), "intent_path": ("", "intent_path"), "intent_text": ("", "intent_text"),
    "intent_file_text": ("", "intent_file_text"), "segment": ("", "segment"),
    "segment_started_step": ("", "segment_started_step"), "segment_requested": ("", "segment_requested"),
    "obs_base": ("", "obs_base"), "payload_base": ("", "payload_base"), "checks": ("notes", "checks"),
    "segment_log": ("", "segment_log"),
    "epoch": ("book", "epoch"), "postponements": ("book", "postponements"),
    "_consumed_upto": ("book", "consumed_upto"), "_candidate_floor": ("book", "candidate_floor"),
    "_receipted_gain": ("book", "receipted_gain"), "sent_tokens_total": ("book", "sent_tokens_total"),
    "saved_tokens_total": ("book", "saved_tokens_total"),
    "_payloads_consumed_upto": ("book", "payloads_consumed_upto"), "held_since_fold": ("book", "held_since_fold"),
    "_payload_floor": ("book", "payload_floor"), "_gain_floor": ("book", "gain_floor"),
    "_stable_prefix_end": ("transcript", "stable_prefix_end"), "_reuse_prefix_end": ("transcript", "reuse_prefix_end"),
    "_last_sent_len": ("transcript", "last_sent_len"),
    "_anchor_reported": ("anchor", "reported"), "_anchor_estimate": ("anchor", "estimate_at"),
    "_sent_estimate": ("anchor", "sent_estimate"), "_learn_on_next_usage": ("anchor", "learn_on_next_usage"),
}
_SCALARS = tuple(_PLACES)


def _holder(ctx: SessionContext, key: str):
    part, _ = _PLACES[key]
    return getattr(ctx, part) if part else ctx


def _range(rng: FileRange | None) -> list | None:
    return None if rng is None else [rng.path, rng.start, rng.end, rng.content_hash]


def dump_observation(obs: Observation) -> dict[str, Any]:
    src = obs.source
    return {
        "obs_id": obs.obs_id, "step": obs.step, "segment": obs.segment, "state": obs.state.value, "fold": obs.fold,
        "alias_of": obs.alias_of, "reread_of": obs.reread_of, "denied": obs.denied,
        "entry_index": obs.entry_index, "gain": obs.gain,
        "source": {
            "call_id": src.call_id, "tool": src.tool, "arguments": src.arguments,
            "sha256": src.sha256, "size": src.size, "tokens": src.tokens, "purpose": src.purpose,
            "read": _range(src.read), "file_fingerprint": src.file_fingerprint,
            "first_line": src.first_line, "exit_code": src.exit_code, "written": list(src.written),
        },
    }


def dump_entry(e: Entry) -> dict[str, Any]:
    return {
        "kind": e.kind, "text": e.text, "step": e.step, "pinned": e.pinned, "tool_name": e.tool_name,
        "tool_calls": [[c.id, c.name, c.arguments] for c in e.tool_calls],
        "obs": e.observation.obs_id if e.observation is not None else None,
        "carried": bool(e.meta.get("carried")),
        **({"thinking": list(e.meta["thinking"])} if e.meta.get("thinking") else {}),
    }


def dump_ledger_entry(e: LedgerEntry) -> dict[str, Any]:
    return {"range": _range(e.range), "obs_id": e.obs_id, "received_step": e.received_step,
            "in_context": e.in_context, "evicted_by_fold": e.evicted_by_fold, "times_served": e.times_served,
            "changed_step": e.changed_step}


def dump_fold(f: FoldRecord) -> dict[str, Any]:
    return {**asdict(f), "reason": f.reason.value, "evicted": list(f.evicted), "payloads": list(f.payloads),
            "revived": list(f.revived)}


def dump_payload(p: Payload) -> dict[str, Any]:
    return {"pid": p.pid, "step": p.step, "entry_index": p.entry_index, "state": p.state.value, "fold": p.fold,
            "gain": p.gain, "sha256": p.sha256, "size": p.size, "tokens": p.tokens,
            "spec": [p.spec.call_index, p.spec.key, p.spec.start, p.spec.end, p.spec.path, p.spec.what]}


def dump_file(note: FileNote) -> dict[str, Any]:
    return asdict(note)


def dump_scalars(ctx: SessionContext) -> dict[str, Any]:
    return {key: getattr(_holder(ctx, key), _PLACES[key][1]) for key in _SCALARS}


def dump_state(ctx: SessionContext) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "scalars": dump_scalars(ctx),
        "entries": [dump_entry(e) for e in ctx.entries],
        "observations": [dump_observation(o) for o in ctx.observations],
        "payloads": [dump_payload(p) for p in ctx.payloads],
        "ledger": [dump_ledger_entry(e) for e in ctx.ledger],
        "folds": [dump_fold(f) for f in ctx.folds],
        "decisions": ctx.decisions.to_json(),
        "files": [dump_file(note) for note in ctx.notes.files.values()],
    }


def load_state(
    state: Mapping[str, Any],
    *,
    texts: Mapping[str, str],
    model: str,
    system_prompt: str,
    tools: tuple[ToolSchema, ...],
    budget: Budget,
    policy: str | Policy = "on_demand",
    calibration: Calibration | None = None,
    **options: Any,
) -> SessionContext:
    """Rebuild a context; ``texts`` maps each observation's sha256 to its text."""
    if state.get("version") not in READABLE_VERSIONS:
        raise ValueError(f"unsupported gateway state version {state.get('version')!r}")
    ctx = SessionContext(
        model=model, system_prompt=system_prompt, tools=tools, budget=budget,
        policy=policy, calibration=calibration, **options,
    )
    for key, value in state["scalars"].items():
        if key in _PLACES:
            setattr(_holder(ctx, key), _PLACES[key][1], value)
    if "decisions" in state:
        ctx.decisions = Decisions.from_json(state["decisions"])
    else:  # version 1 had none: the constraints of the intent as it stands
        ctx.decisions.sync_constraints(ctx.intent_file_text, ctx.step)
    ctx.notes.files = {raw["path"]: FileNote(**raw) for raw in state.get("files", ())}
    ctx.observations.extend(_observation(raw, texts) for raw in state["observations"])
    for raw in state.get("payloads", ()):
        payload = _payload(raw, state["entries"])
        ctx.payloads.append(payload)
        ctx.transcript.payloads_by_entry.setdefault(payload.entry_index, []).append(payload)
    for index, raw in enumerate(state["entries"]):
        entry = Entry(
            raw["kind"], raw["text"], step=raw["step"], pinned=raw["pinned"], tool_name=raw["tool_name"],
            tool_calls=tuple(ToolCall(*c) for c in raw["tool_calls"]),
            observation=ctx.observation(raw["obs"]) if raw["obs"] is not None else None,
        )
        entry.meta["index"] = index
        if raw.get("carried"):
            entry.meta["carried"] = True
        if raw.get("thinking"):
            entry.meta["thinking"] = tuple(raw["thinking"])
        ctx.transcript.append(entry)
        if entry.kind == "intent_update" and entry.text != INTENT_UPDATE_FOLDED:
            ctx.intent_updates.append(entry)
    for raw in state["ledger"]:
        ctx.ledger.restore(LedgerEntry(
            FileRange(*raw["range"]), raw["obs_id"], raw["received_step"], raw["in_context"],
            raw["evicted_by_fold"], raw["times_served"], raw.get("changed_step"),
        ))
    for raw in state["folds"]:
        ctx.book.folds.append(FoldRecord(**{**raw, "reason": FoldReason(raw["reason"]), "evicted": tuple(raw["evicted"]),
                                       "payloads": tuple(raw.get("payloads", ())),
                                       "revived": tuple(raw.get("revived", ()))}))
    ctx.book.evictable_gain = sum(o.gain for o in [*ctx.observations, *ctx.payloads] if o.state is ObsState.CONSUMED)
    return ctx


def reuse_state(ctx: SessionContext, *, system_prompt: str, tools: tuple[ToolSchema, ...], budget: Budget,
                calibration: Calibration, economics: CacheEconomics, length_prior: LengthPrior) -> SessionContext:
    """``ctx``, kept in memory since its state was saved, as ``load_state`` would rebuild
    it from that state under these settings (those of the same model and policy): what
    the state holds is what ``ctx`` holds, the rest is the request's."""
    header = estimate_header(system_prompt, tools)
    ctx.transcript.estimate += header - ctx.transcript.header_tokens
    ctx.transcript.header_tokens = header
    ctx.system_prompt, ctx.tools, ctx.budget = system_prompt, tools, budget
    ctx.anchor.calibration, ctx.economics, ctx.length_prior = calibration, economics, length_prior
    return ctx


def _observation(raw: Mapping[str, Any], texts: Mapping[str, str]) -> Observation:
    src = raw["source"]
    if src["sha256"] not in texts:
        raise KeyError(f"blob {src['sha256']} of call {src['call_id']} is missing")
    read = FileRange(*src["read"]) if src["read"] is not None else None
    source = ObservationInput(
        call_id=src["call_id"], tool=src["tool"], arguments=src["arguments"], text=texts[src["sha256"]],
        sha256=src["sha256"], size=src["size"], tokens=src["tokens"], purpose=src["purpose"],
        read=read, file_fingerprint=src["file_fingerprint"], first_line=src["first_line"],
        exit_code=src.get("exit_code"), written=tuple(src.get("written", ())),
    )
    return Observation(
        obs_id=raw["obs_id"], step=raw["step"], source=source, segment=raw.get("segment", 1),
        state=ObsState(raw["state"]),
        fold=raw["fold"], alias_of=raw["alias_of"], reread_of=raw["reread_of"], denied=raw["denied"],
        entry_index=raw["entry_index"], gain=raw["gain"],
    )


def _payload(raw: Mapping[str, Any], entries: list[Mapping[str, Any]]) -> Payload:
    """A payload's text is a slice of its entry's text, or of one of its tool calls' arguments."""
    call_index, key, start, end, path, what = raw["spec"]
    entry = entries[raw["entry_index"]]
    holder = entry["text"] if call_index < 0 else entry["tool_calls"][call_index][2][key]
    spec = PayloadSpec(call_index, key, start, end, holder[start:end], path, what)
    return Payload(
        pid=raw["pid"], step=raw["step"], entry_index=raw["entry_index"], spec=spec, sha256=raw["sha256"],
        size=raw["size"], tokens=raw["tokens"], state=ObsState(raw["state"]), fold=raw["fold"], gain=raw["gain"],
    )
