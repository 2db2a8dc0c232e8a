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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from observations.gateway import receipts
from observations.gateway.budget import Budget, Calibration
from observations.gateway.decisions import Decision, Decisions, render_person_message
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.handoff import FileNote, is_check_command, symbols_in
from observations.gateway.ledger import ReadLedger
from observations.gateway.messages import Message, Request, ToolCall, ToolSchema
from observations.gateway.payloads import (
    Payload,
    apply_receipts,
    find_payloads,
    payload_gain,
    text_sha256,
)
from observations.gateway.policies import MIN_GAIN_TOKENS, FoldReason, Plan, Policy, policy_named
from observations.gateway.tokens import (
    estimate_header,
    estimate_message_tokens,
    estimate_request_message,
    estimate_tokens,
)
from observations.gateway.transcript import (
    RESET_FOLD,
    Entry,
    FileRange,
    Observation,
    ObservationInput,
    ObsState,
)

Evictable = Observation | Payload
MAX_CHECKS = 8  # verification lines a handoff can show


class ContextTooLarge(Exception):
    """What cannot be evicted alone exceeds the ceiling, even in a new segment."""


class SegmentNeeded(ContextTooLarge):
    """No fold can (or should) keep the request under the ceiling: start a new segment
    (segments.start_segment). A caller that cannot does what it did on ContextTooLarge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class FoldRecord:
    number: int  # 1-based, per session
    step: int
    epoch: int  # the epoch this fold started
    reason: FoldReason
    postponements: int
    projection_before: int
    projection_after: int
    evicted: tuple[int, ...]  # obs_ids
    tokens_freed: int  # estimated, before calibration
    first_changed_message: int  # index into request.messages
    payloads: tuple[int, ...] = ()  # payload ids receipted
    revived: tuple[int, ...] = ()  # obs_ids of notes not sent yet that it served as their text


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
    def __init__(
        self,
        *,
        model: str,
        system_prompt: str,
        tools: tuple[ToolSchema, ...],
        budget: Budget,
        policy: str | Policy = "on_demand",
        calibration: Calibration | None = None,
        intent_text: str = "",
        intent_path: str = ".atrium/intent.md",
        economics: CacheEconomics | None = None,
        length_prior: LengthPrior | None = None,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.tools = tools
        self.budget = budget
        self.policy = policy_named(policy) if isinstance(policy, str) else policy
        self.calibration = calibration or Calibration(model)
        # Segments are on_demand's answer to a full window; the baselines send anyway.
        self.segments_enabled = self.policy.manages_window
        self.economics = economics or CacheEconomics()
        self.length_prior = length_prior or LengthPrior()

        self.entries: list[Entry] = []
        self.observations: list[Observation] = []  # this segment's, from obs_id obs_base
        self.payloads: list[Payload] = []  # this segment's, from pid payload_base
        self.ledger = ReadLedger()
        self.folds: list[FoldRecord] = []
        self.step = 0
        self.epoch = 0
        self.postponements = 0
        self.intent_path = intent_path
        self.intent_text = intent_text  # the copy in the context
        self.intent_file_text = intent_text  # the file as last read
        # What a handoff is built from; kept across segments.
        self.segment = 1
        self.segment_started_step = 0
        self.segment_log: list[dict] = []  # segments.SegmentRecord as dicts
        self.segment_requested = ""  # who asked for a new segment, if someone did
        self.decisions = Decisions()
        self.decisions.sync_constraints(intent_text, 0)
        self.files: dict[str, FileNote] = {}
        self.checks: list[str] = []
        self.obs_base = 0
        self.payload_base = 0
        self._intent_updates: list[Entry] = []
        self._stable_prefix_end = -1
        self._reuse_prefix_end = -1  # see Request.reuse_prefix_end
        self._last_sent_len = 0  # messages in the request sent last

        self._header_tokens = estimate_header(system_prompt, tools)
        self._rendered: list[Message] = []
        self._tokens: list[int] = []
        self._payloads_by_entry: dict[int, list[Payload]] = {}
        self.estimate = self._header_tokens  # raw estimate of the request as it stands
        self._evictable_gain = 0  # sum of gains over consumed, unevicted results and payloads
        self._anchor_reported: int | None = None
        self._anchor_estimate = 0
        self._sent_estimate = 0
        self._learn_on_next_usage = False
        self._consumed_upto = 0  # observations before this index are no longer fresh
        self._payloads_consumed_upto = 0
        self._candidate_floor = 0  # observations before this index are all receipted
        self._gain_floor = 0  # ... or can never be fold candidates again
        self._payload_floor = 0  # the same for payloads
        self._receipted_gain = 0  # tokens the standing receipts keep out of each request
        self.held_since_fold = 0  # Σ over requests since the last fold of what a fold would free
        self.sent_tokens_total = 0  # projected input tokens of every request assembled
        self.saved_tokens_total = 0  # what the receipts kept out of those requests
        if intent_text:
            self._append(Entry("intent", receipts.render_intent_block(intent_text, intent_path), pinned=True))

    # ----------------------------------------------------------------- building
    def add_user(self, text: str, *, kind: str = "user", pinned: bool = False) -> Entry:
        """A person's words (task, chat, steer, answer) or a pinned note; never evicted."""
        return self._append(Entry(kind, text, step=self.step, pinned=pinned))

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

    def add_check(self, line: str) -> None:
        """A verification line (the room's check, a test command) for the next handoff."""
        self.checks = (self.checks + [line])[-MAX_CHECKS:]

    def add_assistant(self, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> Entry:
        """The model answered: every result and payload it saw is now consumed (evictable)."""
        self.step += 1
        for obs in self.observations[self._consumed_upto :]:
            if obs.state is ObsState.FRESH:
                self._consume(obs, self.eviction_gain(obs))
        self._consumed_upto = len(self.observations)
        for payload in self.payloads[self._payloads_consumed_upto :]:
            if payload.state is ObsState.FRESH:
                self._consume(payload, payload_gain(payload.spec, self.payload_receipt(payload)))
        self._payloads_consumed_upto = len(self.payloads)
        self._advance_candidate_floor()
        entry = self._append(Entry("assistant", text, step=self.step, tool_calls=tuple(tool_calls)))
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
        self._append(Entry("tool_result", step=self.step, observation=obs, tool_name=source.tool))
        self._note_records(source)
        return obs

    def _serve_read(self, obs: Observation, rng: FileRange) -> None:
        """A read of ``rng``: a note pointing at the same unchanged text still in the
        request, or the text itself (a re-read once the earlier copy was folded out)."""
        seen = self.ledger.lookup(rng)
        if seen is not None and seen.in_context:
            obs.alias_of = seen.obs_id
            return
        if seen is not None and not seen.in_context:
            obs.reread_of = seen.obs_id
        self.ledger.received(rng, obs.obs_id, self.step)

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
        entry = Entry(
            "intent_update",
            receipts.render_intent_update(file_text, self.intent_path, kind),
            step=self.step,
            pinned=True,
        )
        self._intent_updates.append(entry)
        self._append(entry)
        return f"intent.{kind}"

    def observation(self, obs_id: int) -> Observation | None:
        """This segment's observation ``obs_id`` (None once its segment ended)."""
        index = obs_id - self.obs_base
        return self.observations[index] if 0 <= index < len(self.observations) else None

    # ----------------------------------------------------------------- budget
    def projection(self) -> int:
        """Projected input tokens of the request as it stands now."""
        ratio = self.calibration.ratio
        if self._anchor_reported is not None:
            return self._anchor_reported + round((self.estimate - self._anchor_estimate) * ratio)
        return round(self.estimate * ratio)

    def record_usage(self, reported_input_tokens: int, *, learn: bool = True) -> None:
        """The provider reported the input size of the request just sent.

        ``learn=False`` when another model than the calibrated one answered (a fallback):
        its count anchors the projection but says nothing about this model's ratio.
        """
        if self._learn_on_next_usage and learn:
            self.calibration.learn(reported_input_tokens, self._sent_estimate)
        self._learn_on_next_usage = False
        self._anchor_reported = reported_input_tokens
        self._anchor_estimate = self._sent_estimate

    # ----------------------------------------------------------------- boundary
    def prepare(self, *, person_waiting: bool = False) -> Boundary:
        """Decide at a step boundary and assemble the request about to be sent.
        Raises SegmentNeeded when a new segment must start first."""
        reason = self.segment_due()
        if reason:
            raise SegmentNeeded(reason)
        return self._decide(self.policy.plan(self, person_waiting=person_waiting, overflow=False))

    def segment_due(self) -> str | None:
        """Why a new segment should start before the next request, if it should."""
        if not self.segments_enabled:
            return None
        if self.segment_requested:
            return f"asked for by {self.segment_requested}"
        projection = self.projection()
        if projection <= self.budget.trigger or self.step <= self.segment_started_step:
            return None
        floor = projection - round(self._evictable_gain * self.calibration.ratio)
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
        plan = self.policy.plan(self, person_waiting=False, overflow=True)
        if not plan.evict:
            if self.segments_enabled and self.step > self.segment_started_step:
                raise SegmentNeeded("the provider rejected the request as too long and nothing is left to fold")
            raise ContextTooLarge(
                f"the provider rejected the request as too long and nothing is left to evict "
                f"(policy {self.policy.name}, projection {self.projection():,} tokens)"
            )
        return self._decide(plan)

    def _decide(self, plan: Plan) -> Boundary:
        fold = None
        if plan.postpone:
            self.postponements += 1
        elif plan.evict:
            fold = self._fold(plan)
        elif self.projection() <= self.budget.trigger:
            self.postponements = 0
        projection = self.projection()
        if projection > self.budget.ceiling and self.policy.manages_window:
            raise ContextTooLarge(
                f"the parts that cannot be evicted (system prompt, intent, handoff, messages, the newest "
                f"step and fresh results) need about {projection:,} tokens, above the ceiling of "
                f"{self.budget.ceiling:,} for a {self.budget.window:,}-token window"
            )
        anchored = self._anchor_reported is not None
        if not anchored:
            self._learn_on_next_usage = True
        self._sent_estimate = self.estimate
        unchanged = self._last_sent_len if fold is None else min(self._last_sent_len, fold.first_changed_message)
        self._reuse_prefix_end, self._last_sent_len = unchanged - 1, len(self._rendered)
        self.sent_tokens_total += projection
        self.saved_tokens_total += round(self._receipted_gain * self.calibration.ratio)
        self.held_since_fold += round(self._evictable_gain * self.calibration.ratio)
        if self.segment_log and not self.segment_log[-1].get("first_request_tokens"):
            self.segment_log[-1]["first_request_tokens"] = projection
        return Boundary(self.request(), projection, anchored, fold, plan)

    def request(self, *, extra: tuple[Message, ...] = (), max_tokens: int | None = None,
                purpose: str = "step") -> Request:
        return Request(
            model=self.model,
            system=self.system_prompt,
            tools=self.tools,
            messages=tuple(self._rendered) + extra,
            max_tokens=self.budget.output_budget if max_tokens is None else max_tokens,
            stable_prefix_end=self._stable_prefix_end,
            reuse_prefix_end=self._reuse_prefix_end,
            step=self.step,
            purpose=purpose,
        )

    def _fold(self, plan: Plan) -> FoldRecord:
        before = self.projection()
        if plan.reason is FoldReason.OVERFLOW:
            before = max(before, self.budget.window + 1)
        number = len(self.folds) + 1
        freed = 0
        evicted = [item.obs_id for item in plan.evict if isinstance(item, Observation)]
        payload_ids = [item.pid for item in plan.evict if isinstance(item, Payload)]
        for item in plan.evict:
            if item.state is ObsState.CONSUMED:
                self._evictable_gain -= item.gain
                self._receipted_gain += item.gain
            item.state, item.fold = ObsState.RECEIPTED, number
        self.ledger.evicted(evicted, number)
        changed = self._entry_indexes_to_rerender(set(evicted))
        changed += [item.entry_index for item in plan.evict if isinstance(item, Payload)]
        changed = sorted(set(changed))
        for index in changed:
            freed += self._rerender(index)
        self._anchor_reported = None  # what the provider counted no longer applies
        revived: list[Observation] = []
        if plan.reason is not FoldReason.OVERFLOW:  # after an overflow our projection is known to be low
            revived, grown = self._serve_fresh_notes(set(evicted))
            changed, freed = sorted(set(changed + [o.entry_index for o in revived])), freed - grown
        if self._intent_updates:
            # A new epoch may restate the intent at the top instead of in updates.
            changed.append(0)
            freed += self._rewrite_intent_block()
        self.epoch += 1
        self.postponements, postponed = 0, self.postponements
        self.held_since_fold = 0
        self._advance_candidate_floor()
        first_changed = min(changed) if changed else len(self._rendered)
        self._stable_prefix_end = len(self._rendered) - 1
        record = FoldRecord(
            number=number,
            step=self.step,
            epoch=self.epoch,
            reason=plan.reason or FoldReason.TRIGGER,
            postponements=postponed,
            projection_before=before,
            projection_after=self.projection(),
            evicted=tuple(evicted),
            tokens_freed=freed,
            first_changed_message=first_changed,
            payloads=tuple(payload_ids),
            revived=tuple(o.obs_id for o in revived),
        )
        self.folds.append(record)
        return record

    # ----------------------------------------------------------------- policy view
    def eviction_gain(self, obs: Observation) -> int:
        """Estimated tokens freed by replacing ``obs`` with its receipt."""
        entry_tokens = estimate_message_tokens(self.shown_text(obs))
        return entry_tokens - estimate_message_tokens(self.receipt_text(obs))

    def evictable_gain(self) -> int:
        return self._evictable_gain

    def eviction_candidates(self) -> Iterator[Evictable]:
        """Consumed results and payloads worth a receipt, oldest message first."""
        results = (o for o in self.observations[self._gain_floor : self._consumed_upto]
                   if o.state is ObsState.CONSUMED and o.gain)
        payloads = [p for p in self.payloads[self._payload_floor : self._payloads_consumed_upto]
                    if p.state is ObsState.CONSUMED and p.gain]
        if not payloads:
            yield from results
            return
        yield from sorted([*results, *payloads], key=lambda item: item.entry_index)

    def hot_gain(self) -> int:
        """What the candidates still in use (``is_hot``) would free; they are among the
        newest, so only the tail of the session is looked at."""
        total = 0
        for obs_id in self.noted_targets():
            # An older result a fresh note points at (the tail's are counted below).
            obs = self.observation(obs_id)
            if obs is not None and obs.step < self.step - 1 and obs.state is ObsState.CONSUMED and obs.gain:
                total += obs.gain
        for items, upto in ((self.observations, self._consumed_upto), (self.payloads, self._payloads_consumed_upto)):
            for item in reversed(items[:upto]):
                if item.step < self.step - 1:
                    break
                if item.state is ObsState.CONSUMED and item.gain and self.is_hot(item):
                    total += item.gain
        return total

    def noted_targets(self) -> set[int]:
        """Results that a note the model has not seen yet points at (reads just asked for)."""
        return {o.alias_of for o in self.observations[self._consumed_upto :] if o.alias_of is not None}

    def remaining_requests(self) -> float:
        return self.length_prior.remaining(self.step)

    def is_hot(self, item: Evictable) -> bool:
        """Still in use: from the agent's last two turns (what it wrote, and the results
        it asked for), unless superseded since (a read of a file written later, the
        output of a command run again later); and, whatever its age, a result that a
        note the model has not seen yet points at (the read it just asked for)."""
        if isinstance(item, Observation) and item.obs_id in self.noted_targets():
            return True
        if item.step < self.step - 1:
            return False
        if isinstance(item, Payload):
            return True
        src = item.source
        if src.read is not None:
            note = self.files.get(src.read.path)
            return not (note is not None and note.written and note.last_written > item.step)
        # The same call made again: the same tool with the same arguments (an editor's
        # "command" is only its subcommand: an edit of another file supersedes nothing).
        return not any(o.step > item.step and o.source.tool == src.tool and o.source.arguments == src.arguments
                       for o in self.observations[-8:])

    def live_observations_newest_first(self) -> Iterator[Observation]:
        for obs in reversed(self.observations[self._candidate_floor :]):
            if obs.state is not ObsState.RECEIPTED:
                yield obs

    # ----------------------------------------------------------------- rendering
    def _append(self, entry: Entry) -> Entry:
        message = self._render(entry)
        tokens = estimate_request_message(message)
        self.entries.append(entry)
        self._rendered.append(message)
        self._tokens.append(tokens)
        self.estimate += tokens
        entry.meta["index"] = len(self.entries) - 1
        if entry.observation is not None:
            entry.observation.entry_index = len(self.entries) - 1
        return entry

    def _consume(self, item: Evictable, gain: int) -> None:
        item.state = ObsState.CONSUMED
        item.gain = gain if gain >= MIN_GAIN_TOKENS else 0
        self._evictable_gain += item.gain

    def _register_payloads(self, entry: Entry) -> None:
        index = entry.meta["index"]
        for spec in find_payloads(entry.text, entry.tool_calls):
            data = spec.text.encode("utf-8", "surrogatepass")
            payload = Payload(
                pid=self.payload_base + len(self.payloads), step=self.step, entry_index=index, spec=spec,
                sha256=text_sha256(spec.text), size=len(data), tokens=estimate_tokens(spec.text),
            )
            self.payloads.append(payload)
            self._payloads_by_entry.setdefault(index, []).append(payload)
            if spec.path:
                self._file(spec.path).note_write(symbols_in(spec.text), self.step)

    def _note_records(self, source: ObservationInput) -> None:
        """What a handoff will need to know about this result: files and checks."""
        if source.read is not None and not source.read.path.startswith("recall:"):
            rng = source.read  # a recalled text is not a file of the worktree
            lines = "" if rng.start is None and rng.end is None else f"{rng.start or 1}-{rng.end or 'end'}"
            self._file(rng.path).note_read(lines, symbols_in(source.text), self.step)
        for path in source.written:
            self._file(path).note_write([], self.step)
        if source.exit_code is not None:
            command = str(source.arguments.get("command", "")) if isinstance(source.arguments, dict) else ""
            if is_check_command(command):
                self.add_check(f"- step {self.step}: `{_one_line(command)}` → exit {source.exit_code}")

    def _file(self, path: str) -> FileNote:
        note = self.files.get(path)
        if note is None:
            note = self.files[path] = FileNote(path)
        return note

    def shown_text(self, obs: Observation) -> str:
        if obs.state is ObsState.RECEIPTED:
            if obs.fold == RESET_FOLD:
                return receipts.render_too_large(obs)
            return self.receipt_text(obs)
        if obs.alias_of is not None:
            target = self.observation(obs.alias_of)
            if target is None or target.state is ObsState.RECEIPTED:
                return receipts.render_alias_receipt(obs)
            return receipts.render_note(obs, target)
        return obs.source.text

    def receipt_text(self, obs: Observation) -> str:
        if obs.alias_of is not None:
            return receipts.render_alias_receipt(obs)
        return receipts.render_receipt(obs)

    @staticmethod
    def payload_receipt(payload: Payload) -> str:
        spec = payload.spec
        return receipts.render_payload_receipt(ref=payload.ref, what=spec.what, path=spec.path, size=payload.size,
                                               text=spec.text)

    def _render(self, entry: Entry) -> Message:
        if entry.kind == "assistant":
            payloads = self._payloads_by_entry.get(entry.meta.get("index", len(self.entries)), ())
            receipted = [(p.spec, self.payload_receipt(p)) for p in payloads if p.state is ObsState.RECEIPTED]
            text, calls = apply_receipts(entry.text, entry.tool_calls, receipted)
            return Message("assistant", text, tool_calls=calls)
        if entry.kind == "tool_result":
            obs = entry.observation
            assert obs is not None
            return Message("tool", self.shown_text(obs), tool_call_id=obs.call_id, tool_name=entry.tool_name)
        return Message("user", entry.text)

    def _rerender(self, index: int) -> int:
        """Re-render entry ``index``; return the estimated tokens it freed."""
        message = self._render(self.entries[index])
        tokens = estimate_request_message(message)
        freed = self._tokens[index] - tokens
        self._rendered[index], self._tokens[index] = message, tokens
        self.estimate -= freed
        return freed

    def _serve_fresh_notes(self, evicted: set[int]) -> tuple[list[Observation], int]:
        """A note the model has not seen yet, whose text this fold evicted, becomes that
        text (a re-read after the fold) where the request stays under the fold trigger
        (a margin below the ceiling, for the estimate's error):
        a read just asked for must not be answered with "not in the context any more"
        (the eviction deadlock). Called after the ledger was told of the eviction and
        the evicted entries were re-rendered. Returns the notes served as text and the
        tokens they grew by."""
        revived, grown = [], 0
        for obs in self.observations[self._consumed_upto :]:
            if obs.alias_of not in evicted or obs.state is not ObsState.FRESH or obs.source.read is None:
                continue
            target, obs.alias_of = obs.alias_of, None
            growth = -self._rerender(obs.entry_index)
            if self.projection() > self.budget.trigger:
                obs.alias_of = target  # no room for the text: its honest receipt stays
                self._rerender(obs.entry_index)
                continue
            obs.reread_of = target
            self.ledger.received(obs.source.read, obs.obs_id, self.step)
            revived.append(obs)
            grown += growth
        return revived, grown

    def _entry_indexes_to_rerender(self, evicted: set[int]) -> list[int]:
        indexes = []
        for obs in self.observations[self._candidate_floor :]:
            if obs.obs_id in evicted or (obs.alias_of in evicted and obs.state is not ObsState.RECEIPTED):
                indexes.append(obs.entry_index)
        return indexes

    def _rewrite_intent_block(self) -> int:
        freed = 0
        if self.entries and self.entries[0].kind == "intent":
            self.entries[0].text = receipts.render_intent_block(self.intent_text, self.intent_path)
            freed += self._rerender(0)
        for entry in self._intent_updates:
            entry.text = receipts.INTENT_UPDATE_FOLDED
            freed += self._rerender(entry.meta["index"])
        self._intent_updates.clear()
        return freed

    def _advance_candidate_floor(self) -> None:
        observations = self.observations
        floor = self._candidate_floor
        while floor < len(observations) and observations[floor].state is ObsState.RECEIPTED:
            floor += 1
        self._candidate_floor = floor
        # What can never be a fold candidate again (receipted, or consumed with nothing
        # to gain): a boundary looks only at the part of a long session still in play.
        self._gain_floor = _past_settled(observations, max(self._gain_floor, floor), self._consumed_upto)
        self._payload_floor = _past_settled(self.payloads, self._payload_floor, self._payloads_consumed_upto)

    # ----------------------------------------------------------------- introspection
    def rendered_messages(self) -> tuple[Message, ...]:
        """The messages of the current request, in order (one per entry)."""
        return tuple(self._rendered)

    def served_text(self, obs: Observation) -> str:
        """What the request holds for ``obs`` now: its text, a note or its receipt."""
        return self._rendered[obs.entry_index].text

    def message_tokens(self) -> list[int]:
        """Estimated tokens of each message of the current request, in order."""
        return list(self._tokens)

    @property
    def header_tokens(self) -> int:
        return self._header_tokens

    def non_evictable_tokens(self) -> int:
        return self.estimate - self._evictable_gain


def _past_settled(items: list, floor: int, consumed_upto: int) -> int:
    while floor < consumed_upto and (items[floor].state is ObsState.RECEIPTED or not items[floor].gain):
        floor += 1
    return floor


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
