"""The cost index and the cache-read prefix the engine measures."""

from __future__ import annotations

import pytest

from observations.gateway.messages import Message, ToolCall
from observations.gateway.tokens import estimate_message_tokens, estimate_request_message
from observations.replay.eval.cost import CostModel, RequestCost
from observations.replay.eval.engine import ReplaySettings, replay
from observations.replay.trajectory import Step
from tests.replay.test_evaluate_factories import file_text, read_event, shell_event, trajectory


class TestCostModel:
    def test_three_requests_by_hand(self):
        # 1: 2,000 tokens, nothing cached yet: all written.
        # 2: 2,500 tokens, the first 2,000 repeat request 1: read 2,000, write 500.
        # 3: 1,800 tokens after a fold; only 1,200 still match request 2.
        model = CostModel()
        costs = [
            model.split(2_000, 0, 0),
            model.split(2_500, 2_000, 2_000),
            model.split(1_800, 1_200, 2_500),
        ]
        assert costs == [
            RequestCost(0, 0, 2_000),
            RequestCost(0, 2_000, 500),
            RequestCost(0, 1_200, 600),
        ]
        input_cost = sum(model.input_cost(c) for c in costs)
        # 2,000×1.25 + (2,000×0.1 + 500×1.25) + (1,200×0.1 + 600×1.25)
        assert input_cost == pytest.approx(2_500 + 825 + 870)
        # Output: 10 + 20 + 30 tokens at 5× an uncached input token.
        assert input_cost + model.output * (10 + 20 + 30) == pytest.approx(4_495)

    def test_a_request_below_the_minimum_is_not_cached(self):
        model = CostModel()
        assert model.split(900, 0, 0) == RequestCost(900, 0, 0)
        assert model.split(1_000, 900, 900) == RequestCost(1_000, 0, 0)

    def test_nothing_is_read_after_a_request_too_small_to_be_written(self):
        # Request 1 (900) was never written to the cache, so request 2 reads nothing.
        assert CostModel().split(2_000, 900, 900) == RequestCost(0, 0, 2_000)

    def test_prices_are_configurable(self):
        model = CostModel(cache_read=0.5, cache_write=2.0, output=0.0)
        assert model.input_cost(RequestCost(10, 100, 1_000)) == pytest.approx(10 + 50 + 2_000)

    def test_negative_prices_are_refused(self):
        with pytest.raises(ValueError):
            CostModel(cache_read=-0.1)


class TestReplayedCacheShare:
    def test_append_only_requests_read_the_whole_previous_request(self):
        events = [read_event(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 80)) for n in range(6)]
        run = replay(trajectory(events), "none", 128_000)
        # The first request (system prompt and task) is below the cacheable minimum:
        # billed uncached, never written, so the second one has nothing to read.
        assert run.sent[0] < 1_024 and run.uncached[0] == run.sent[0]
        assert run.cache_read[1] == 0 and run.cache_write[1] == run.sent[1]
        assert run.cache_read[2:] == run.sent[1:-1]
        assert [
            r + w for r, w in zip(run.cache_read[1:], run.cache_write[1:], strict=True)
        ] == run.sent[1:]

    def test_a_fold_breaks_the_prefix_at_its_first_receipt(self):
        events = [read_event(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 150)) for n in range(30)]
        run = replay(trajectory(events), "on_demand", 24_000)
        assert run.folds
        fold = run.folds[0]
        assert 0 < run.cache_read[fold] < run.sent[fold - 1]
        assert run.cache_read[fold + 1] == run.sent[fold]  # the new epoch is append-only again

    def test_the_cost_index_adds_recorded_output_at_its_weight(self):
        events = [shell_event("c0", "ls", "a.py\n" * 400), shell_event("c1", "ls", "b.py\n" * 400)]
        settings = ReplaySettings(output_budget=1_000)
        run = replay(trajectory(events), "none", 128_000, settings)
        model = settings.cost
        expected = sum(
            model.input_cost(RequestCost(u, r, w))
            for u, r, w in zip(run.uncached, run.cache_read, run.cache_write, strict=True)
        )
        assert run.input_cost == pytest.approx(expected)
        assert run.output_tokens == 20  # 10 recorded per step
        assert run.cost == pytest.approx(expected + 5.0 * 20)


class TestFormatErrorSteps:
    def test_a_dropped_format_error_rides_in_the_next_request_only(self):
        notice = "Your last output did not use any tool calls! " * 10
        steps = [
            Step(0, "THOUGHT: look", (shell_event("c0", "ls", "a.py\n" * 300),)),
            Step(1, "I will now think aloud " * 20, (), notice=notice, kept_in_history=False),
            Step(2, "THOUGHT: again", (shell_event("c2", "ls", "b.py\n" * 300),)),
            Step(3, "THOUGHT: done", ()),
        ]
        run = replay(trajectory([], steps=steps), "none", 128_000)
        dropped = estimate_message_tokens(steps[1].assistant_text) + estimate_message_tokens(notice)
        assert run.sent[2] == run.sent[1] + dropped  # request 2 carries the failed exchange
        # Request 3 no longer has it: request 1 plus step 2's answer (with its native
        # tool call's arguments, which the provider counts) and result.
        event = steps[2].events[0]
        answer = Message("assistant", steps[2].assistant_text, (ToolCall(event.call_id, event.tool, event.arguments),))
        added = estimate_request_message(answer) + estimate_message_tokens(event.output)
        assert run.sent[3] == run.sent[1] + added
        assert run.cache_read[3] == run.sent[1]  # the shared prefix stops where the tail was
