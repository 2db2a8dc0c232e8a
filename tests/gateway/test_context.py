"""SessionContext decisions, one rule at a time."""

from __future__ import annotations

import re

import pytest

from observations.gateway.budget import Budget, Calibration
from observations.gateway.context import ContextTooLarge
from observations.gateway.policies import FoldReason
from observations.gateway.transcript import ObsState
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input


def grow(ctx, steps: int, *, lines: int = 150, start: int = 0):
    """Each step reads a new file of ``lines`` lines."""
    boundaries = []
    for n in range(start, start + steps):
        boundaries.append(ctx.prepare())
        ctx.add_assistant(f"step {n}", (call(f"c{n}", path=f"f{n}.py"),))
        ctx.add_tool_result(read_input(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 0, lines)))
    return boundaries


class TestBudget:
    def test_ceiling_is_the_lower_of_90_percent_and_what_output_and_reserve_leave(self):
        assert Budget(window=128_000, output_budget=8_000, reserve=1_000).ceiling == 115_200
        assert Budget(window=32_000, output_budget=8_000, reserve=1_000).ceiling == 23_000

    def test_trigger_is_80_percent_unless_the_ceiling_is_lower(self):
        assert Budget(window=100_000, output_budget=1_000).trigger == 80_000
        assert Budget(window=8_000, output_budget=4_000).trigger == Budget(window=8_000, output_budget=4_000).ceiling

    def test_minimum_freed_scales_down_for_small_windows(self):
        assert Budget(window=200_000, output_budget=1).min_freed == 16_000
        assert Budget(window=32_000, output_budget=1).min_freed == 4_000

    def test_nonsense_budgets_are_refused(self):
        with pytest.raises(ValueError):
            Budget(window=0, output_budget=1)
        with pytest.raises(ValueError):
            Budget(window=1_000, output_budget=1, target_ratio=0.9, trigger_ratio=0.8)


class TestOnDemandFolds:
    def test_fresh_results_and_the_newest_step_are_never_evicted(self):
        ctx = make_context(window=30_000, output_budget=2_000)
        for b in grow(ctx, 40):
            if b.fold:
                newest_step = ctx.step
                assert all(ctx.observation(i).step < newest_step for i in b.fold.evicted if ctx.observation(i))


class TestProjectionAndCalibration:
    def test_projection_is_the_reported_count_plus_what_was_added_since(self):
        ctx = make_context(window=100_000, output_budget=1_000)
        ctx.prepare()
        ctx.record_usage(5_000)
        assert ctx.projection() == 5_000
        ctx.add_assistant("a", (call("c1", "shell"),))
        ctx.add_tool_result(shell_input("c1", "ls", "z" * 4_000))
        added = ctx.estimate - ctx.anchor.estimate_at
        assert ctx.projection() == 5_000 + round(added * ctx.calibration.ratio)

    def test_calibration_learns_only_from_the_first_reported_call_after_a_fold(self):
        ctx = make_context(window=30_000, output_budget=1_000)
        boundary = ctx.prepare()
        assert not boundary.anchored
        ctx.record_usage(round(ctx.estimate * 1.5))  # unanchored: learn
        assert ctx.calibration.ratio == pytest.approx(1.5, rel=0.01)
        ctx.prepare()
        ctx.record_usage(round(ctx.estimate * 2.2))  # anchored: do not learn
        assert ctx.calibration.samples == 1

    def test_calibration_stays_within_one_and_two_and_a_half(self):
        cal = Calibration("m")
        cal.learn(reported=10, estimated=1_000)
        assert cal.ratio == 1.0
        cal = Calibration("m")
        cal.learn(reported=10_000, estimated=1_000)
        assert cal.ratio == 2.5

    def test_calibration_is_per_model(self):
        a = make_context()
        b = make_context()
        assert a.calibration is not b.calibration
        a.prepare()
        a.record_usage(a.estimate * 2)
        assert b.calibration.ratio == 1.0


class TestOverflow:
    def test_overflow_forces_a_fold_and_never_resends_the_same_request(self):
        ctx = make_context(window=60_000, output_budget=1_000)
        grow(ctx, 20)
        ctx.add_assistant("next")
        sent = ctx.prepare()
        assert sent.fold is None
        retry = ctx.after_overflow()
        assert retry.fold is not None and retry.fold.reason is FoldReason.OVERFLOW
        assert retry.request.messages != sent.request.messages
        assert retry.projection <= ctx.budget.target

    def test_overflow_with_nothing_left_to_evict_fails_clearly(self):
        ctx = make_context(window=60_000, output_budget=1_000)
        ctx.add_user("hello")
        ctx.prepare()
        with pytest.raises(ContextTooLarge, match="nothing is left to evict"):
            ctx.after_overflow()


class TestReceipts:
    def test_a_receipt_names_the_call_and_says_honestly_how_to_get_the_text_back(self):
        ctx = make_context(window=30_000, output_budget=1_000)
        grow(ctx, 40)
        obs = next(o for o in ctx.observations if o.state is ObsState.RECEIPTED)
        text = ctx.transcript.messages[obs.entry_index].text
        src = obs.source
        for part in ("read_file f0.py", f"{src.size:,} bytes", src.sha256[:12], f"{src.tokens:,} tokens"):
            assert part in text
        assert text.count("read_file f0.py") == 1 and "range:" not in text  # the range is printed once
        assert "First line: " in text and src.text.splitlines()[0][:40] in text
        assert "not in the context any more" in text
        assert f'recall("{src.sha256[:12]}") returns the exact text' in text
        assert "reading the file again returns its current text" in text
        assert not re.search(r"do not|don't|avoid|already read|never", text, re.I)

    def test_a_receipt_for_a_command_offers_recall_never_running_it_again(self):
        ctx = make_context(window=30_000, output_budget=1_000)
        for n in range(30):
            ctx.add_assistant(f"s{n}", (call(f"c{n}", "shell"),))
            output = "<returncode>1</returncode>\n<output>\n" + f"FAILED test_{n}\n" + "trace line\n" * 400
            ctx.add_tool_result(shell_input(f"c{n}", "migrate && pytest", output))
            ctx.add_assistant("next")
            ctx.prepare()
        obs = next(o for o in ctx.observations if o.state is ObsState.RECEIPTED)
        text = ctx.transcript.messages[obs.entry_index].text
        assert "First line: 'FAILED test_0'" in text  # the output wrapper is skipped
        assert "recall(" in text and "again" not in text

    def test_the_receipt_stays_inside_its_tool_result(self):
        ctx = make_context(window=30_000, output_budget=1_000)
        grow(ctx, 40)
        obs = next(o for o in ctx.observations if o.state is ObsState.RECEIPTED)
        message = ctx.transcript.messages[obs.entry_index]
        assert message.role == "tool" and message.tool_call_id == obs.call_id


class TestIntent:
    def test_a_changed_intent_file_is_appended_verbatim_and_logged(self):
        ctx = make_context(intent="Objective: A\nConstraints: keep vendor/ untouched")
        assert ctx.refresh_intent("Objective: A\nConstraints: keep vendor/ untouched") is None
        assert ctx.refresh_intent("Objective: B\nConstraints: keep vendor/ untouched") == "intent.changed"
        texts = [m.text for m in ctx.prepare().request.messages]
        assert texts[0].endswith("Objective: A\nConstraints: keep vendor/ untouched")
        assert texts[-1].endswith("Objective: B\nConstraints: keep vendor/ untouched")

    def test_a_context_copy_that_disagrees_with_the_unchanged_file_is_drift_and_the_file_wins(self):
        ctx = make_context(intent="Objective: A")
        ctx.intent_text = "Objective: A (paraphrased)"  # e.g. restored from a stale state
        assert ctx.refresh_intent("Objective: A") == "intent.drift"
        assert ctx.prepare().request.messages[-1].text.endswith("Objective: A")

    def test_a_fold_restates_the_current_intent_at_the_top(self):
        ctx = make_context(window=30_000, output_budget=1_000, intent="Objective: A")
        ctx.refresh_intent("Objective: B")
        boundaries = grow(ctx, 40)
        assert any(b.fold for b in boundaries)
        texts = [m.text for m in ctx.prepare().request.messages]
        assert texts[0].endswith("Objective: B")
        assert not any(t.endswith("Objective: A") for t in texts)


class TestEager:
    def test_eager_keeps_the_three_newest_results_within_six_thousand_tokens(self):
        ctx = make_context(window=200_000, output_budget=1_000, policy="eager")
        grow(ctx, 10, lines=40)
        ctx.add_assistant("look")
        boundary = ctx.prepare()
        assert boundary.fold is not None and boundary.fold.reason is FoldReason.EAGER
        raw = [o for o in ctx.observations if o.state is not ObsState.RECEIPTED]
        assert [o.obs_id for o in raw] == [7, 8, 9]
        assert sum(o.source.tokens for o in raw) <= 6_000

    def test_policy_none_never_evicts(self):
        ctx = make_context(window=30_000, output_budget=1_000, policy="none")
        boundaries = grow(ctx, 40)
        assert all(b.fold is None for b in boundaries)
        assert boundaries[-1].projection > ctx.budget.ceiling
