"""SessionContext: one session's conversation and the decision of what its next
model request contains.

Invariants:
- Within an epoch the request is append-only: every rendered message is cached and
  only a fold (which starts a new epoch) re-renders old messages.
- Only consumed tool results are evicted; a receipt replaces the text inside the
  same tool_result, so tool_use/tool_result pairs stay valid.
- "Serve text or a note" is decided by this session's ledger alone, and a note is
  given only while the earlier text really is in the request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from observations.gateway import receipts
from observations.gateway.budget import Budget, Calibration
from observations.gateway.ledger import ReadLedger
from observations.gateway.messages import Message, Request, ToolCall, ToolSchema
from observations.gateway.policies import MIN_GAIN_TOKENS, FoldReason, Plan, Policy, policy_named
from observations.gateway.tokens import (
    estimate_message_tokens,
    estimate_request_message,
    estimate_tokens,
)
from observations.gateway.transcript import Entry, Observation, ObservationInput, ObsState


class ContextTooLarge(Exception):
    """What cannot be evicted alone exceeds the ceiling: the session must stop."""


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
        notes: bool = True,
        room_seen: set | None = None,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.tools = tools
        self.budget = budget
        self.policy = policy_named(policy) if isinstance(policy, str) else policy
        self.calibration = calibration or Calibration(model)
        self.notes = notes
        # Comparison only: the room-wide "already read" set of the gateway that
        # deadlocked. Production never passes it; see tests/gateway/test_deadlock.py.
        self.room_seen = room_seen

        self.entries: list[Entry] = []
        self.observations: list[Observation] = []
        self.ledger = ReadLedger()
        self.folds: list[FoldRecord] = []
        self.step = 0
        self.epoch = 0
        self.postponements = 0
        self.intent_path = intent_path
        self.intent_text = intent_text  # the copy in the context
        self.intent_file_text = intent_text  # the file as last read
        self._intent_updates: list[Entry] = []
        self._stable_prefix_end = -1
        self._reuse_prefix_end = -1  # see Request.reuse_prefix_end
        self._last_sent_len = 0  # messages in the request sent last

        self._header_tokens = estimate_tokens(system_prompt) + sum(
            estimate_tokens(t.name + t.description + str(t.parameters)) for t in tools
        )
        self._rendered: list[Message] = []
        self._tokens: list[int] = []
        self.estimate = self._header_tokens  # raw estimate of the request as it stands
        self._evictable_gain = 0  # sum of eviction_gain over consumed, unevicted results
        self._anchor_reported: int | None = None
        self._anchor_estimate = 0
        self._sent_estimate = 0
        self._learn_on_next_usage = False
        self._consumed_upto = 0  # observations before this index are no longer fresh
        self._candidate_floor = 0  # observations before this index are all receipted
        self._receipted_gain = 0  # tokens the standing receipts keep out of each request
        self.sent_tokens_total = 0  # projected input tokens of every request assembled
        self.saved_tokens_total = 0  # what the receipts kept out of those requests
        if intent_text:
            self._append(Entry("intent", receipts.render_intent_block(intent_text, intent_path), pinned=True))

    # ----------------------------------------------------------------- building
    def add_user(self, text: str, *, kind: str = "user", pinned: bool = False) -> Entry:
        """A person's words (task, chat, steer, answer) or a pinned note; never evicted."""
        return self._append(Entry(kind, text, step=self.step, pinned=pinned))

    def add_assistant(self, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> Entry:
        """The model answered: every result it saw is now consumed (evictable)."""
        self.step += 1
        for obs in self.observations[self._consumed_upto :]:
            if obs.state is ObsState.FRESH:
                obs.state = ObsState.CONSUMED
                gain = self.eviction_gain(obs)
                obs.gain = gain if gain >= MIN_GAIN_TOKENS else 0
                self._evictable_gain += obs.gain
        self._consumed_upto = len(self.observations)
        return self._append(Entry("assistant", text, step=self.step, tool_calls=tuple(tool_calls)))

    def add_tool_result(self, source: ObservationInput) -> Observation:
        """Serve one tool result: full text, or a short note if this session's ledger
        shows the same unchanged range is still in the request."""
        obs = Observation(obs_id=len(self.observations), step=self.step, source=source)
        rng = source.read
        if rng is not None:
            seen = self.ledger.lookup(rng)
            if self.room_seen is not None and rng.key in self.room_seen:
                # The deadlocking rule, for comparison: "already read in this room".
                obs.state, obs.denied = ObsState.RECEIPTED, True
            elif seen is not None and seen.in_context and self.notes:
                obs.alias_of = seen.obs_id
            else:
                if seen is not None and not seen.in_context:
                    obs.reread_of = seen.obs_id
                self.ledger.received(rng, obs.obs_id, self.step)
            if self.room_seen is not None:
                self.room_seen.add(rng.key)
        self.observations.append(obs)
        self._append(Entry("tool_result", step=self.step, observation=obs, tool_name=source.tool))
        return obs

    def refresh_intent(self, file_text: str) -> str | None:
        """Re-read at every cycle start; the file wins. Returns the event kind logged."""
        if file_text != self.intent_file_text:
            kind = "changed"
        elif file_text != self.intent_text:
            kind = "drift"
        else:
            return None
        self.intent_file_text = self.intent_text = file_text
        entry = Entry(
            "intent_update",
            receipts.render_intent_update(file_text, self.intent_path, kind),
            step=self.step,
            pinned=True,
        )
        self._intent_updates.append(entry)
        self._append(entry)
        return f"intent.{kind}"

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
        """Decide at a step boundary and assemble the request about to be sent."""
        return self._decide(self.policy.plan(self, person_waiting=person_waiting, overflow=False))

    def after_overflow(self) -> Boundary:
        """The provider refused the request as too long: mandatory fold, never the
        same request again. Raises ContextTooLarge if nothing can be evicted."""
        plan = self.policy.plan(self, person_waiting=False, overflow=True)
        if not plan.evict:
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
        if projection > self.budget.ceiling and self.policy.name == "on_demand":
            raise ContextTooLarge(
                f"the parts that cannot be evicted (system prompt, intent, messages, the newest "
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
        request = Request(
            model=self.model,
            system=self.system_prompt,
            tools=self.tools,
            messages=tuple(self._rendered),
            max_tokens=self.budget.output_budget,
            stable_prefix_end=self._stable_prefix_end,
            reuse_prefix_end=self._reuse_prefix_end,
        )
        return Boundary(request, projection, anchored, fold, plan)

    def _fold(self, plan: Plan) -> FoldRecord:
        before = self.projection()
        if plan.reason is FoldReason.OVERFLOW:
            before = max(before, self.budget.window + 1)
        number = len(self.folds) + 1
        changed: list[int] = []
        freed = 0
        evicted = [obs.obs_id for obs in plan.evict]
        for obs in plan.evict:
            if obs.state is ObsState.CONSUMED:
                self._evictable_gain -= obs.gain
                self._receipted_gain += obs.gain
            obs.state, obs.fold = ObsState.RECEIPTED, number
        self.ledger.evicted(evicted, number)
        evicted_set = set(evicted)
        for index in self._entry_indexes_to_rerender(evicted_set):
            freed += self._rerender(index)
            changed.append(index)
        if self._intent_updates:
            # A new epoch may restate the intent at the top instead of in updates.
            changed.append(0)
            freed += self._rewrite_intent_block()
        self.epoch += 1
        self.postponements, postponed = 0, self.postponements
        self._anchor_reported = None  # what the provider counted no longer applies
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
        )
        self.folds.append(record)
        return record

    # ----------------------------------------------------------------- policy view
    def eviction_gain(self, obs: Observation) -> int:
        """Estimated tokens freed by replacing ``obs`` with its receipt."""
        entry_tokens = estimate_message_tokens(self._text_for(obs))
        return entry_tokens - estimate_message_tokens(self._receipt_text(obs))

    def evictable_gain(self) -> int:
        return self._evictable_gain

    def eviction_candidates(self) -> Iterator[Observation]:
        """Consumed, unpinned results worth a receipt, oldest first."""
        for obs in self.observations[self._candidate_floor : self._consumed_upto]:
            if obs.state is ObsState.CONSUMED and obs.gain:
                yield obs

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

    def _text_for(self, obs: Observation) -> str:
        if obs.denied:
            return receipts.render_room_dedup_denial(obs)
        if obs.state is ObsState.RECEIPTED:
            return self._receipt_text(obs)
        if obs.alias_of is not None:
            target = self.observations[obs.alias_of]
            if target.state is ObsState.RECEIPTED:
                return receipts.render_alias_receipt(obs)
            return receipts.render_note(obs, target)
        return obs.source.text

    def _receipt_text(self, obs: Observation) -> str:
        if obs.alias_of is not None:
            return receipts.render_alias_receipt(obs)
        if self.policy.name == "mask-last-5":
            return receipts.render_mask_stub(obs)
        return receipts.render_receipt(obs)

    def _render(self, entry: Entry) -> Message:
        if entry.kind == "assistant":
            return Message("assistant", entry.text, tool_calls=entry.tool_calls)
        if entry.kind == "tool_result":
            obs = entry.observation
            assert obs is not None
            return Message("tool", self._text_for(obs), tool_call_id=obs.call_id, tool_name=entry.tool_name)
        return Message("user", entry.text)

    def _rerender(self, index: int) -> int:
        """Re-render entry ``index``; return the estimated tokens it freed."""
        message = self._render(self.entries[index])
        tokens = estimate_request_message(message)
        freed = self._tokens[index] - tokens
        self._rendered[index], self._tokens[index] = message, tokens
        self.estimate -= freed
        return freed

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
