"""Property-based tests of the on_demand gateway over random sessions.

A random session is a sequence of steps; each step the model asks for a few tool
calls (reads of a handful of files and ranges, writes that change a file, shell
commands with outputs of random size) and people sometimes steer or edit the intent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from observations.gateway.context import ContextTooLarge, SegmentNeeded, SessionContext
from observations.gateway.messages import serialize_request
from observations.gateway.policies import FoldReason
from observations.gateway.transcript import ObsState
from tests.gateway.factories import (
    call,
    file_text,
    make_context,
    new_segment,
    read_input,
    shell_input,
)

PATHS = [f"src/mod{n}.py" for n in range(6)] + ["vendor/lib.py", "tests/test_app.py"]
RANGES = [(None, None), (1, 60), (40, 160)]

read_action = st.tuples(st.just("read"), st.sampled_from(PATHS), st.sampled_from(RANGES))
write_action = st.tuples(st.just("write"), st.sampled_from(PATHS), st.just(None))
shell_action = st.tuples(st.just("shell"), st.integers(min_value=0, max_value=12_000), st.just(None))
step_strategy = st.fixed_dictionaries(
    {
        "actions": st.lists(st.one_of(read_action, read_action, write_action, shell_action), min_size=1, max_size=3),
        "steer": st.booleans(),
        "person_waiting": st.booleans(),
        "intent_edit": st.integers(min_value=0, max_value=30).map(lambda n: n == 0),
    }
)
session_strategy = st.fixed_dictionaries(
    {
        "window": st.sampled_from([8_000, 12_000, 24_000, 32_000, 64_000]),
        "output_budget": st.sampled_from([500, 1_000, 4_000]),
        "max_postponements": st.integers(min_value=0, max_value=2),
        "provider_ratio": st.floats(min_value=1.0, max_value=1.6),
        "steps": st.lists(step_strategy, min_size=15, max_size=60),
    }
)


@dataclass
class Files:
    versions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATHS, 0))

    def read(self, path: str, rng: tuple[int | None, int | None]) -> str:
        lines = file_text(path, self.versions[path], 160).splitlines(keepends=True)
        start, end = rng
        return "".join(lines[(start or 1) - 1 : end])


def check_pairs(request) -> None:
    """(2) every tool_use has exactly one tool_result, right after its assistant turn."""
    pending: list[str] = []
    for message in request.messages:
        if message.role == "tool":
            assert pending and message.tool_call_id == pending.pop(0)
        else:
            assert not pending, f"tool calls without results: {pending}"
            if message.role == "assistant":
                pending = [c.id for c in message.tool_calls]
    assert not pending


def non_evictable_alone_exceeds_ceiling(ctx: SessionContext) -> bool:
    return round((ctx.estimate - ctx.book.evictable_gain) * ctx.calibration.ratio) > ctx.budget.ceiling


def run_session(spec, ctx: SessionContext | None = None) -> SessionContext:
    ctx = ctx or make_context(
        window=spec["window"], output_budget=spec["output_budget"], max_postponements=spec["max_postponements"]
    )
    files = Files()
    ctx.add_user("Please fix the failing test.", kind="task")
    steers: list[str] = []
    previous = ""
    previous_request = None
    previous_epoch = ctx.book.epoch
    for index, step in enumerate(spec["steps"]):
        if step["intent_edit"]:
            new_intent = ctx.intent_file_text + f"\nConstraint added at step {index}: keep the API."
            assert ctx.refresh_intent(new_intent) == "intent.changed"
        else:
            assert ctx.refresh_intent(ctx.intent_file_text) is None
        if step["steer"]:
            steers.append(f"prefer small diffs (#{index})")
            ctx.add_person(kind="steer", author="alice", text=steers[-1])
        segment = ctx.segment
        try:
            try:
                boundary = ctx.prepare(person_waiting=step["person_waiting"])
            except SegmentNeeded as need:
                event("new segment")
                new_segment(ctx, need.reason)
                boundary = ctx.prepare(person_waiting=step["person_waiting"])
        except ContextTooLarge:
            event("context too large")
            # (1) failing is allowed only when what cannot be evicted is too big.
            assert non_evictable_alone_exceeds_ceiling(ctx)
            return ctx
        request = boundary.request
        serialized = serialize_request(request)
        # (1) never above the ceiling
        assert boundary.projection <= ctx.budget.ceiling
        check_pairs(request)
        # The cache hint names only messages the previous request sent unchanged.
        reuse = request.reuse_prefix_end
        if previous_request is not None:
            assert request.messages[: reuse + 1] == previous_request.messages[: reuse + 1]
            assert reuse < len(previous_request.messages)
        previous_request = request
        # (4) append-only within an epoch
        if ctx.book.epoch == previous_epoch:
            assert serialized.startswith(previous)
        else:
            assert boundary.fold is not None or ctx.segment != segment
        check_fold(ctx, boundary.fold)
        # (6) the intent, as the file says now, verbatim in every request; steers too
        texts = [m.text for m in request.messages]
        assert any(ctx.intent_file_text in text for text in texts)
        for steer in steers:
            assert any(steer in text for text in texts)
        previous, previous_epoch = serialized, ctx.book.epoch

        # The provider counts tokens its own way: a steady ratio over our estimate.
        ctx.record_usage(round(ctx.estimate * spec["provider_ratio"]))
        act(ctx, files, index, step["actions"])
    return ctx


def check_fold(ctx: SessionContext, fold) -> None:
    """(5) below the trigger, a fold happens only because it pays: what it frees, read
    no more by the requests expected ahead, outweighs rewriting what it keeps."""
    if fold is None:
        return
    event(f"fold ({fold.reason})")
    if fold.projection_before <= ctx.budget.trigger:
        assert fold.reason is FoldReason.COST
        freed = fold.projection_before - fold.projection_after
        assert ctx.economics.payback_requests(fold.projection_after, freed) <= ctx.view.remaining_requests() + 1
    assert fold.evicted or fold.payloads


def act(ctx: SessionContext, files: Files, index: int, actions) -> None:
    """The step's tool calls and their results."""
    calls = [call(f"s{index}c{n}", kind) for n, (kind, _, _) in enumerate(actions)]
    ctx.add_assistant(f"step {index}", tuple(calls))
    for tool_call, (kind, arg, rng) in zip(calls, actions, strict=True):
        if kind == "read":
            check_read(ctx, tool_call.id, files, arg, rng)
        elif kind == "write":
            files.versions[arg] += 1
            ctx.add_tool_result(shell_input(tool_call.id, f"write {arg}", f"wrote {arg}"))
        else:
            ctx.add_tool_result(shell_input(tool_call.id, "make", "log line\n" * (arg // 9)))


def check_read(ctx: SessionContext, call_id: str, files: Files, path: str, rng) -> None:
    """(3) a range whose text left the context is served whole on the next read."""
    text = files.read(path, rng)
    source = read_input(call_id, path, text, *rng)
    before = ctx.ledger.lookup(source.read)
    was_in_context = before is not None and before.in_context
    obs = ctx.add_tool_result(source)
    if not was_in_context:
        if before is not None:
            event("re-read after eviction served whole")
        assert obs.alias_of is None and obs.state is ObsState.FRESH
        assert ctx.entries[obs.entry_index].observation is obs
        assert text == ctx.transcript.messages[obs.entry_index].text
    else:
        # A note only while the earlier text is really in the request.
        target = ctx.observation(obs.alias_of)
        assert target.state is not ObsState.RECEIPTED
        assert ctx.transcript.messages[target.entry_index].text == text


def check_receipts_match_ledger(ctx: SessionContext) -> None:
    for obs in ctx.observations:
        if obs.state is ObsState.RECEIPTED and obs.source.read is not None and obs.alias_of is None:
            entry = ctx.ledger.lookup(obs.source.read)
            assert entry is not None
            assert not entry.in_context or entry.obs_id != obs.obs_id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_strategy)
def test_on_demand_keeps_every_invariant(spec):
    ctx = run_session(spec)
    check_receipts_match_ledger(ctx)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_strategy)
def test_a_retry_starts_with_an_empty_ledger(spec):
    first = run_session(spec)
    retry = make_context(window=spec["window"], output_budget=spec["output_budget"])
    assert len(retry.ledger) == 0 and first.ledger is not retry.ledger
