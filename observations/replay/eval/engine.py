"""Replay one recorded trajectory through the context gateway under one policy and window.

The recorded actions are replayed as they were; only the context changes. Per step:
the gateway prepares the request (and may fold), the simulated provider reports the
size of that request in estimator units, then the recorded answer and its tool
results are added. The reported size includes the arguments of native tool calls,
which the provider counts but the gateway's own estimate leaves out; so the gateway's
projection is exact after every report except for the newest step's call arguments,
as it would be against a real provider. A format-error step the agent
dropped from its history (``kept_in_history=False``) rides along in the very next
request only, after the gateway's messages, as the agent sent it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from observations.gateway import segments
from observations.gateway.budget import Budget
from observations.gateway.context import Boundary, ContextTooLarge, SessionContext
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.messages import Message, Request, ToolCall
from observations.gateway.policies import ON_DEMAND, FoldReason, Policy, policy_row
from observations.gateway.policies import POLICIES as POLICY_TABLE
from observations.gateway.tokens import (
    estimate_message_tokens,
    estimate_request_message,
    estimate_tokens,
)
from observations.gateway.turn import TurnDriver, Usage
from observations.replay.eval.baselines import RoomDedup, render_legacy_receipt
from observations.replay.eval.billing import Biller, appends
from observations.replay.eval.cost import CostModel
from observations.replay.eval.inputs import (
    observation_input,
    output_tokens,
    tool_schemas,
)
from observations.replay.eval.peers import PEERS, Item
from observations.replay.eval.reads import ReadTracker
from observations.replay.trajectory import Step, Trajectory

# The comparison configurations: the deadlocking one (eager eviction with the room-wide
# "already read" de-duplication), and on_demand without each piece that keeps sessions
# going or its working set in front of the agent, to show what each is worth (opt-in
# with --policy): the ledger's short notes, payload receipts, receipts that name
# `recall`, new segments, the working-set guard (either half, or both). Each is a policy
# of the table (policies.POLICIES) with some of its Serving or Budget fields switched.
ROOM_DEDUP = "eager-room-dedup"
NO_NOTES = "on_demand-no-notes"
NO_PAYLOADS = "on_demand-no-payloads"
LEGACY_RECEIPTS = "on_demand-legacy-receipts"
NO_SEGMENTS = "on_demand-no-segments"
NO_GUARD = "on_demand-no-guard"
NO_WORKING_SET = "on_demand-no-working-set"
NO_LEAST_FOLD = "on_demand-no-least-fold"
# The hindsight limit of on_demand-no-guard's family (oracle.py).
ORACLE_NO_GUARD = "oracle-no-guard"


@dataclass(frozen=True, slots=True)
class _Variant:
    base: str
    serving: dict[str, Callable[[], Any]] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=dict)


_VARIANTS: dict[str, _Variant] = {
    ROOM_DEDUP: _Variant("eager", {"gate": RoomDedup}),
    NO_NOTES: _Variant(ON_DEMAND, {"notes": lambda: False}),
    NO_PAYLOADS: _Variant(ON_DEMAND, {"payload_receipts": lambda: False}),
    LEGACY_RECEIPTS: _Variant(ON_DEMAND, {"receipt": lambda: render_legacy_receipt}),
    NO_SEGMENTS: _Variant(ON_DEMAND, {"segments": lambda: False}),
    NO_GUARD: _Variant(ON_DEMAND, budget={"working_set_steps": 0, "optional_min_freed": 0.0}),
    NO_WORKING_SET: _Variant(ON_DEMAND, budget={"working_set_steps": 0}),
    NO_LEAST_FOLD: _Variant(ON_DEMAND, budget={"optional_min_freed": 0.0}),
}
# Every policy of the table, the deadlocking configuration, what users would pick
# instead (peers.py), and "oracle" (oracle.py), the hindsight limit every other policy
# is measured against.
POLICIES = (*POLICY_TABLE, ROOM_DEDUP, *PEERS, "oracle")
OPTIONAL_POLICIES = (NO_NOTES, NO_PAYLOADS, LEGACY_RECEIPTS, NO_SEGMENTS, NO_GUARD, NO_WORKING_SET, NO_LEAST_FOLD,
                     ORACLE_NO_GUARD)


def replayable() -> tuple[str, ...]:
    """Every name ``--policy`` takes: the table's rows as they stand, the comparisons."""
    return (*POLICIES, *OPTIONAL_POLICIES)


DEFAULT_OUTPUT_BUDGET = 4_096


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    cost: CostModel = field(default_factory=CostModel)
    # Budget fields other than window/output_budget (tuning only; defaults otherwise).
    budget: tuple[tuple[str, Any], ...] = ()
    # The gateway decides with these prices (default: the ones it is billed with).
    decide_with: CostModel | None = None

    def budget_for(self, window: int) -> Budget:
        return Budget(window=window, output_budget=self.output_budget, **dict(self.budget))


@dataclass(slots=True)
class RunResult:
    """One trajectory replayed under one policy and window. Lists have one item per
    request sent; ``folds`` holds the indexes of the requests a fold preceded."""

    policy: str
    window: int
    trigger: int
    ceiling: int
    sent: list[int] = field(default_factory=list)
    cache_read: list[int] = field(default_factory=list)
    cache_write: list[int] = field(default_factory=list)
    uncached: list[int] = field(default_factory=list)
    receipts: list[int] = field(default_factory=list)
    folds: list[int] = field(default_factory=list)
    output_tokens: int = 0
    input_cost: float = 0.0
    output_cost: float = 0.0
    rereads_after_eviction: int = 0
    denied_rereads: int = 0
    # The fidelity proxy (reads.py): results taken out and needed again, their tokens,
    # and the steps from leaving to being needed, summed.
    needed: int = 0
    needed_tokens: int = 0
    needed_steps: int = 0
    failure: str | None = None  # why the gateway gave up (ContextTooLarge), if it did
    # Requests that opened a new segment (the first request after each reset), and per
    # reset the handoff's size in bytes (total and per section) and its prose request.
    segments: list[int] = field(default_factory=list)
    handoffs: list[dict[str, Any]] = field(default_factory=list)
    payload_receipts: int = 0
    receipts_before_segments: int = 0  # standing when each earlier segment ended
    # The same run billed with every fold request (and a new segment's first request)
    # written to the cache whole: no assumption that its unchanged start is read.
    input_cost_full_write: float = 0.0
    cache_read_full_write: int = 0
    # Per recorded step: that accounting's cost, and whether the step went beyond a
    # plain request: one over the ceiling, a mandatory fold, a new segment, or the stop.
    # The oracle's search reads these (oracle.py).
    step_costs: list[float] = field(default_factory=list)
    step_blocked: list[bool] = field(default_factory=list)
    # ... and what the step would cost were its request a fold request (written whole).
    step_fold_costs: list[float] = field(default_factory=list)
    # (estimate, provider-reported) input tokens per step, where the source has them.
    estimates: list[tuple[int, int]] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.sent)

    def begin_step(self) -> None:
        """The next recorded step's per-step figures, at nothing yet."""
        self.step_costs.append(0.0)
        self.step_blocked.append(False)
        self.step_fold_costs.append(0.0)

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def cost(self) -> float:
        return self.input_cost + self.output_cost

    @property
    def over_window(self) -> int:
        return sum(1 for tokens in self.sent if tokens > self.window)

    @property
    def over_ceiling(self) -> int:
        return sum(1 for tokens in self.sent if tokens > self.ceiling)

    @property
    def receipts_issued(self) -> int:
        # A replaced result never comes back within a segment, so the last request of
        # each segment holds all of that segment's.
        return self.receipts_before_segments + (self.receipts[-1] if self.receipts else 0)


def new_context(trajectory: Trajectory, policy: str | Policy, budget: Budget, *,
                economics: CacheEconomics | None = None, prior: LengthPrior | None = None) -> SessionContext:
    """A policy of the table is served as its row says, live and here alike; a
    comparison configuration switches its base policy's serving; a Policy object (the
    oracle's forced schedules) gets production's serving."""
    serving = None
    if isinstance(policy, str) and policy in _VARIANTS:
        variant = _VARIANTS[policy]
        policy = variant.base
        serving = replace(policy_row(policy).serving, **{name: make() for name, make in variant.serving.items()})
    return SessionContext(
        model=trajectory.model or trajectory.source,
        system_prompt=trajectory.system_prompt,
        tools=tool_schemas(trajectory.meta),
        budget=budget,
        policy=policy,
        economics=economics,
        length_prior=prior,
        serving=serving,
    )


def replay(
    trajectory: Trajectory,
    policy: str | Policy,
    window: int,
    settings: ReplaySettings | None = None,
    *,
    prior: LengthPrior | None = None,
    on_step: Callable[[int], None] | None = None,
) -> RunResult:
    """``policy``: a name, or a Policy object (the oracle's forced schedules). ``prior``:
    how long comparable sessions ran, for on_demand's fold economics. ``on_step`` is
    told each recorded step's index before its boundary."""
    name = policy if isinstance(policy, str) else policy.name
    if isinstance(policy, str) and policy not in POLICY_TABLE and policy not in _VARIANTS and policy not in PEERS:
        raise ValueError(f"unknown policy {policy!r}: use {', '.join(replayable())}")
    settings = settings or ReplaySettings()
    if name in PEERS:
        return _replay_peer(trajectory, name, window, settings, on_step)
    budget = settings.budget_for(window)
    if name in _VARIANTS:
        budget = replace(budget, **_VARIANTS[name].budget)
    result = RunResult(name, window, budget.trigger, budget.ceiling)
    economics = (settings.decide_with or settings.cost).economics
    ctx = new_context(trajectory, policy, budget, economics=economics, prior=prior)
    tracker = ReadTracker(ctx.observation)
    ctx.add_user(trajectory.task, kind="task")
    bill = Biller(result, settings.cost, ctx.transcript.header_tokens)

    tail: tuple[Message, ...] = ()  # a dropped format-error exchange, for one request
    for step in trajectory.steps:
        if on_step is not None:
            on_step(step.index)
        result.begin_step()
        segment = ctx.segment
        sent_request = _send(ctx, step.index, result, bill, tail)
        if sent_request is None:
            break
        boundary, messages, tokens, sent = sent_request
        if boundary.fold is not None:
            result.folds.append(result.requests)
            result.payload_receipts += len(boundary.fold.payloads)
            if boundary.fold.reason in (FoldReason.CEILING, FoldReason.OVERFLOW):
                result.step_blocked[-1] = True
        if ctx.segment != segment:
            result.step_blocked[-1] = True
        bill.request(messages, tokens, output_tokens(step),
                     rewritten=boundary.fold is not None or ctx.segment != segment)
        result.receipts.append(tracker.standing(ctx.observations, step.index))
        if step.reported_input_tokens is not None:
            result.estimates.append((sent, step.reported_input_tokens))

        tail = _add_step(ctx, step, tracker)

    return _judged(result, tracker)


def _judged(result: RunResult, tracker: ReadTracker) -> RunResult:
    result.rereads_after_eviction = tracker.rereads_after_eviction
    result.denied_rereads = tracker.denied_rereads
    result.needed = len(tracker.needs)
    result.needed_tokens = sum(need.tokens for need in tracker.needs.values())
    result.needed_steps = sum(need.steps_after for need in tracker.needs.values())
    return result


def _replay_peer(trajectory: Trajectory, name: str, window: int, settings: ReplaySettings,
                 on_step: Callable[[int], None] | None) -> RunResult:
    """A peer (peers.py) is handed the client's whole history, what ``none`` sends, at
    every request, and bills what it makes of it, its own summary calls included."""
    budget = settings.budget_for(window)
    result = RunResult(name, window, budget.trigger, budget.ceiling)
    peer = PEERS[name](budget)
    ctx = new_context(trajectory, "none", budget)
    tracker = ReadTracker(ctx.observation, gone=peer.gone)
    ctx.add_user(trajectory.task, kind="task")
    bill = Biller(result, settings.cost, ctx.transcript.header_tokens)
    tail: tuple[Message, ...] = ()
    kept: tuple[Message, ...] = ()
    for step in trajectory.steps:
        if on_step is not None:
            on_step(step.index)
        result.begin_step()
        _, messages, tokens, _ = _send(ctx, step.index, result, bill, tail)  # type: ignore[misc]
        entries = ctx.transcript.entries
        history = [Item(message, tokens[index], entries[index].observation if index < len(entries) else None)
                   for index, message in enumerate(messages)]
        # The peer sees the history the agent keeps; a dropped exchange rides after it once.
        kept_history = len(history) - len(tail)
        view, summary = peer.request(history[:kept_history], bill.header)
        view = [*view, *history[kept_history:]]
        if summary is not None:
            bill.request(summary.messages, list(summary.tokens), summary.output_tokens, side=True,
                         header=summary.own_header)
        sent = tuple(item.message for item in view)
        # A dropped format-error exchange (the tail) leaves after one request in every
        # policy: only what the peer changed before it makes a rewritten request.
        rewritten = not appends(kept, sent)
        kept = sent[: len(sent) - len(tail)]
        if rewritten:
            result.folds.append(result.requests)
        bill.request(sent, [item.tokens for item in view], output_tokens(step), rewritten=rewritten)
        result.receipts.append(tracker.standing(ctx.observations, step.index))
        tail = _add_step(ctx, step, tracker)
    return _judged(result, tracker)


def _send(ctx: SessionContext, index: int, result: RunResult, bill: Biller,
          tail: tuple[Message, ...]) -> tuple[Boundary, tuple[Message, ...], list[int], int] | None:
    """The step's request as the live hub makes it (observations/gateway/turn.py), in a
    new segment if the context asks for one, with its messages, their sizes and what the
    simulated provider counted; None (the run failed, recorded in ``result``) when even a
    new segment cannot fit. The simulated provider never overflows: it counts."""

    def count(boundary: Boundary) -> tuple[tuple[Boundary, tuple[Message, ...], list[int], int], Usage]:
        tokens = list(ctx.transcript.tokens) + [estimate_message_tokens(m.text) for m in tail]
        sent = ctx.transcript.header_tokens + sum(tokens)
        return (boundary, boundary.request.messages + tail, tokens, sent), Usage(sent)

    try:
        return TurnDriver(ctx, count, lambda reason: _new_segment(ctx, reason, result, bill)).run()
    except ContextTooLarge as exc:
        result.failure = f"step {index}: {exc}"
        result.step_blocked[-1] = True
        return None


def _add_step(ctx: SessionContext, step: Step, tracker: ReadTracker) -> tuple[Message, ...]:
    """Adds the step's reply and results to the context. A step the agent's history
    dropped (a format error) is sent once with the next request only: returned as its tail."""
    if not step.kept_in_history:
        tail = (Message("assistant", step.assistant_text),)
        if step.notice:
            tail += (Message("user", step.notice),)
        return tail
    # A call written in the assistant text is sent (and counted) with the text;
    # only native calls carry their arguments in the request.
    calls = tuple(ToolCall(e.call_id, e.tool, {} if e.call_in_text else e.arguments) for e in step.events)
    tracker.action("\n".join([step.assistant_text, *(_argument_text(call.arguments) for call in calls)]))
    ctx.add_assistant(step.assistant_text, calls)
    for event in step.events:
        rereads = tracker.before_result(event.accesses)
        obs = ctx.add_tool_result(observation_input(event))
        tracker.after_result(event.accesses, rereads, obs)
    if step.notice:
        ctx.add_user(step.notice, kind="user")
    return ()


def _new_segment(ctx: SessionContext, reason: str, result: RunResult, bill: Biller) -> None:
    """What a live session does at a reset: one prose request (billed like any other,
    its answer a stand-in of realistic size: see segments.stand_in_prose), then the
    handoff opens the next segment."""
    prose = segments.stand_in_prose(ctx)
    request: Request = segments.prose_request(ctx)
    answer = estimate_tokens(prose["progress"] + prose["next_step"])
    # When the conversation no longer fit, the prose request receipted what it could:
    # a rewritten request, for the strict accounting.
    folded = request.messages[:-1] != tuple(ctx.transcript.messages)
    bill.request(request.messages, [estimate_request_message(m) for m in request.messages], answer, rewritten=folded)
    standing = result.receipts[-1] if result.receipts else 0
    result.receipts_before_segments += standing
    result.receipts.append(0)
    handoff = segments.handoff_for(ctx, reason=reason, prose=prose, prose_source="stand-in")
    record = segments.start_segment(ctx, handoff)
    result.segments.append(result.requests)
    result.handoffs.append({"step": ctx.step, "bytes": record.handoff_bytes, "tokens": record.handoff_tokens,
                            "sections": record.handoff_sizes, "reason": reason})


def _argument_text(arguments: dict[str, Any]) -> str:
    """A call's argument values as the agent wrote them (an edit's old text, a command)."""
    return "\n".join(value if isinstance(value, str) else json.dumps(value) for value in arguments.values())
