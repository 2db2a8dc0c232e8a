"""SessionContext: one session's conversation and the decision of what its next
model request contains.

Invariants:
- Within an epoch the request is append-only: every rendered message is cached and
  only a fold (which starts a new epoch) re-renders old messages.
- Only consumed tool results and the payloads of answered tool calls are evicted; a
  receipt replaces the text inside the same message, so tool_use/tool_result pairs
  stay valid.
- "Serve text or a note" is decided by this session's ledger alone, and a note is
  given only while the earlier text really is in the request.
- When folds cannot keep the request under the ceiling, a new segment starts
  (segments.py): same system prompt and tools, the intent, a handoff, the last step.

Its parts, each a module: the rendered transcript (rendering.py), the token anchor
(anchor.py), the fold bookkeeping and the fold itself (folds.py), what a policy sees
(view.py), how results are served (serving.py) and what a handoff will need (worknotes.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from observations.gateway import receipts
from observations.gateway.anchor import TokenAnchor
from observations.gateway.budget import Budget, Calibration
from observations.gateway.decisions import Decision, Decisions, render_person_message
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.folds import FoldBook, FoldRecord, apply_fold
from observations.gateway.ledger import ReadLedger
from observations.gateway.messages import Message, Request, ToolCall, ToolSchema
from observations.gateway.payloads import (
    Payload,
    find_payloads,
    payload_gain,
    text_sha256,
)
from observations.gateway.policies import Plan, Policy, policy_row
from observations.gateway.rendering import (
    RenderedTranscript,
    payload_receipt,
    receipt_text,
    render_entry,
    shown_text,
)
from observations.gateway.serving import Serving
from observations.gateway.tokens import estimate_header, estimate_message_tokens, estimate_tokens
from observations.gateway.transcript import (
    Entry,
    FileRange,
    Observation,
    ObservationInput,
    ObsState,
)
from observations.gateway.view import PolicyView
from observations.gateway.worknotes import WorkNotes


class ContextTooLarge(Exception):
    """What cannot be evicted alone exceeds the ceiling, even in a new segment."""


class SegmentNeeded(ContextTooLarge):
    """No fold can (or should) keep the request under the ceiling: start a new segment
    (segments.start_segment). A caller that cannot does what it did on ContextTooLarge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Boundary:
    """The decision at one step boundary and the request it produced."""

    request: Request
    projection: int  # projected input tokens of `request`
    anchored: bool  # projection built on a provider-reported count
    fold: FoldRecord | None
    plan: Plan

    @property
    def postponed(self) -> bool:
        return self.plan.postpone


class SessionContext:
    def __init__(self, *, model: str, system_prompt: str, tools: tuple[ToolSchema, ...], budget: Budget,
                 policy: str | Policy = "on_demand", calibration: Calibration | None = None, intent_text: str = "",
                 intent_path: str = ".atrium/intent.md", economics: CacheEconomics | None = None,
                 length_prior: LengthPrior | None = None, serving: Serving | None = None) -> None:
        self.model, self.system_prompt, self.tools, self.budget = model, system_prompt, tools, budget
        # A policy by name comes with its row's serving (policies.POLICIES); a policy
        # object (the replay's oracle) with production's.
        row = policy_row(policy) if isinstance(policy, str) else None
        self.policy = row.make() if row is not None else policy
        self.serving = serving or (row.serving if row is not None else Serving())
        self.anchor = TokenAnchor(calibration or Calibration(model))
        # Segments are on_demand's answer to a full window; the baselines send anyway.
        self.segments_enabled = self.policy.manages_window and self.serving.segments
        self.economics = economics or CacheEconomics()
        self.length_prior = length_prior or LengthPrior()
        self.transcript = RenderedTranscript(lambda entry: render_entry(self, entry),
                                             estimate_header(system_prompt, tools))
        self.book = FoldBook()
        self.view = PolicyView(self)

        self.observations: list[Observation] = []  # this segment's, from obs_id obs_base
        self.payloads: list[Payload] = []  # this segment's, from pid payload_base
        self.ledger = ReadLedger()
        self.step = 0
        self.intent_path = intent_path
        self.intent_text = intent_text  # the copy in the context
        self.intent_file_text = intent_text  # the file as last read
        self.intent_updates: list[Entry] = []  # since the last fold
        # What a handoff is built from; kept across segments.
        self.segment = 1
        self.segment_started_step = 0
        self.segment_log: list[dict] = []  # segments.SegmentRecord as dicts
        self.segment_requested = ""  # who asked for a new segment, if someone did
        self.decisions = Decisions()
        self.decisions.sync_constraints(intent_text, 0)
        self.notes = WorkNotes()
        self.obs_base = 0
        self.payload_base = 0
        if intent_text:
            self.transcript.append(Entry("intent", receipts.render_intent_block(intent_text, intent_path), pinned=True))

    # The parts most often read from outside.
    @property
    def calibration(self) -> Calibration:
        return self.anchor.calibration

    @property
    def entries(self) -> list[Entry]:
        return self.transcript.entries

    @property
    def estimate(self) -> int:
        """Raw estimate of the request as it stands."""
        return self.transcript.estimate

    @property
    def folds(self) -> list[FoldRecord]:
        return self.book.folds

    # ----------------------------------------------------------------- building
    def add_user(self, text: str, *, kind: str = "user", pinned: bool = False) -> Entry:
        """A person's words (task, chat, steer, answer) or a pinned note; never evicted."""
        return self.transcript.append(Entry(kind, text, step=self.step, pinned=pinned))

    def add_decision(self, *, kind: str, author: str, text: str, replaces: tuple[int, ...] = ()) -> Decision:
        """People's words every later handoff carries verbatim (a steer, chat to the agent,
        an approval denial); ``replaces`` names the decisions a person replaced with it."""
        return self.decisions.add(kind=kind, author=author, text=text, step=self.step, replaces=replaces)

    def add_person(self, *, kind: str, author: str, text: str, replaces: tuple[int, ...] = ()) -> Decision:
        """A person's message for the agent (a steer, chat that names it): delivered now
        as a user message, and kept as a decision that every later handoff carries."""
        decision = self.add_decision(kind=kind, author=author, text=text, replaces=replaces)
        self.add_user(render_person_message(decision, replaces), kind=kind)
        return decision

    def add_assistant(self, text: str, tool_calls: tuple[ToolCall, ...] = (), *, thinking: tuple[str, ...] = ()) -> Entry:
        """The model answered (its ``thinking`` blocks go back with it): every result and
        payload it saw is now consumed (evictable)."""
        self.step += 1
        book = self.book
        for obs in self.observations[book.consumed_upto :]:
            if obs.state is ObsState.FRESH:
                book.consume(obs, self.eviction_gain(obs))
        book.consumed_upto = len(self.observations)
        for payload in self.payloads[book.payloads_consumed_upto :]:
            if payload.state is ObsState.FRESH:
                book.consume(payload, payload_gain(payload.spec, payload_receipt(payload)))
        book.payloads_consumed_upto = len(self.payloads)
        book.advance_floors(self.observations, self.payloads)
        entry = self.transcript.append(Entry("assistant", text, step=self.step, tool_calls=tuple(tool_calls),
                                             meta={"thinking": tuple(thinking)} if thinking else {}))
        if self.serving.payload_receipts:
            self._register_payloads(entry)
        return entry

    def add_tool_result(self, source: ObservationInput) -> Observation:
        """Serve one tool result: full text, or a short note if this session's ledger
        shows the same unchanged range is still in the request."""
        obs = Observation(obs_id=self.obs_base + len(self.observations), step=self.step, source=source,
                          segment=self.segment)
        if source.read is not None:
            self._serve_read(obs, source.read)
        self.observations.append(obs)
        self.transcript.append(Entry("tool_result", step=self.step, observation=obs, tool_name=source.tool))
        self.notes.result(source, self.step, obs.obs_id)
        return obs

    def _serve_read(self, obs: Observation, rng: FileRange) -> None:
        """A read of ``rng``: a note pointing at the same unchanged text still in the
        request, or the text itself (a re-read once the earlier copy was folded out)."""
        gate = self.serving.gate
        if gate is not None and gate.denies(rng):
            obs.state, obs.denied = ObsState.RECEIPTED, True
        else:
            seen = self.ledger.lookup(rng)
            if seen is not None and seen.in_context and self.serving.notes:
                obs.alias_of = seen.obs_id
            else:
                if seen is not None and not seen.in_context:
                    obs.reread_of = seen.obs_id
                self.ledger.received(rng, obs.obs_id, self.step)
        if gate is not None:
            gate.saw(rng)

    def refresh_intent(self, file_text: str) -> str | None:
        """Re-read at every cycle start; the file wins. Returns the event kind logged."""
        if file_text != self.intent_file_text:
            kind = "changed"
        elif file_text != self.intent_text:
            kind = "drift"
        else:
            return None
        self.intent_file_text = self.intent_text = file_text
        self.decisions.sync_constraints(file_text, self.step)
        entry = Entry("intent_update", receipts.render_intent_update(file_text, self.intent_path, kind),
                      step=self.step, pinned=True)
        self.intent_updates.append(entry)
        self.transcript.append(entry)
        return f"intent.{kind}"

    def observation(self, obs_id: int) -> Observation | None:
        """This segment's observation ``obs_id`` (None once its segment ended)."""
        index = obs_id - self.obs_base
        return self.observations[index] if 0 <= index < len(self.observations) else None

    # ----------------------------------------------------------------- budget
    def projection(self) -> int:
        """Projected input tokens of the request as it stands now."""
        return self.anchor.projection(self.transcript.estimate)

    def record_usage(self, reported_input_tokens: int, *, learn: bool = True) -> None:
        """The provider reported the input size of the request just sent (anchor.py)."""
        self.anchor.record_usage(reported_input_tokens, learn=learn)

    # ----------------------------------------------------------------- boundary
    def prepare(self, *, person_waiting: bool = False) -> Boundary:
        """Decide at a step boundary and assemble the request about to be sent.
        Raises SegmentNeeded when a new segment must start first."""
        reason = self.segment_due()
        if reason:
            raise SegmentNeeded(reason)
        return self._decide(self.policy.plan(self.view, person_waiting=person_waiting, overflow=False))

    def segment_due(self) -> str | None:
        """Why a new segment should start before the next request, if it should."""
        if not self.segments_enabled:
            return None
        if self.segment_requested:
            return f"asked for by {self.segment_requested}"
        projection = self.projection()
        if projection <= self.budget.trigger or self.step <= self.segment_started_step:
            return None
        floor = projection - round(self.book.evictable_gain * self.calibration.ratio)
        if floor > self.budget.ceiling:
            return f"no fold brings the request under the ceiling ({floor:,} tokens cannot be folded)"
        if floor > self.budget.segment:
            return (f"what folds cannot remove ({floor:,} tokens) passed "
                    f"{self.budget.segment_ratio:.0%} of the window")
        return None

    def after_overflow(self) -> Boundary:
        """The provider refused the request as too long: mandatory fold, never the
        same request again. Raises SegmentNeeded (or ContextTooLarge) if nothing can be
        evicted."""
        plan = self.policy.plan(self.view, person_waiting=False, overflow=True)
        if not plan.evict:
            if self.segments_enabled and self.step > self.segment_started_step:
                raise SegmentNeeded("the provider rejected the request as too long and nothing is left to fold")
            raise ContextTooLarge(
                f"the provider rejected the request as too long and nothing is left to evict "
                f"(policy {self.policy.name}, projection {self.projection():,} tokens)"
            )
        return self._decide(plan)

    def _decide(self, plan: Plan) -> Boundary:
        fold, book = None, self.book
        if plan.postpone:
            book.postponements += 1
        elif plan.evict:
            fold = apply_fold(self, plan)
        elif self.projection() <= self.budget.trigger:
            book.postponements = 0
        projection = self.projection()
        if projection > self.budget.ceiling and self.policy.manages_window:
            raise ContextTooLarge(
                f"the parts that cannot be evicted (system prompt, intent, handoff, messages, the newest "
                f"step and fresh results) need about {projection:,} tokens, above the ceiling of "
                f"{self.budget.ceiling:,} for a {self.budget.window:,}-token window"
            )
        anchored = self.anchor.sent(self.transcript.estimate)
        self.transcript.sent(None if fold is None else fold.first_changed_message)
        book.counted(projection, self.calibration.ratio)
        if self.segment_log and not self.segment_log[-1].get("first_request_tokens"):
            self.segment_log[-1]["first_request_tokens"] = projection
        return Boundary(self.request(), projection, anchored, fold, plan)

    def request(self, *, extra: tuple[Message, ...] = (), max_tokens: int | None = None,
                purpose: str = "step") -> Request:
        return Request(
            model=self.model, system=self.system_prompt, tools=self.tools,
            messages=tuple(self.transcript.messages) + extra,
            max_tokens=self.budget.output_budget if max_tokens is None else max_tokens,
            stable_prefix_end=self.transcript.stable_prefix_end, reuse_prefix_end=self.transcript.reuse_prefix_end,
            step=self.step, purpose=purpose,
        )

    # ----------------------------------------------------------------- records
    def eviction_gain(self, obs: Observation) -> int:
        """Estimated tokens freed by replacing ``obs`` with its receipt."""
        return estimate_message_tokens(shown_text(self, obs)) - estimate_message_tokens(receipt_text(self, obs))

    def _register_payloads(self, entry: Entry) -> None:
        index = entry.meta["index"]
        for spec in find_payloads(entry.text, entry.tool_calls):
            data = spec.text.encode("utf-8", "surrogatepass")
            payload = Payload(
                pid=self.payload_base + len(self.payloads), step=self.step, entry_index=index, spec=spec,
                sha256=text_sha256(spec.text), size=len(data), tokens=estimate_tokens(spec.text),
            )
            self.payloads.append(payload)
            self.transcript.payloads_by_entry.setdefault(index, []).append(payload)
            self.notes.body(spec, self.step, payload.pid)

    # ----------------------------------------------------------------- rendering
    def served_text(self, obs: Observation) -> str:
        """What the request holds for ``obs`` now: its text, a note or its receipt."""
        return self.transcript.messages[obs.entry_index].text
