from __future__ import annotations

import pytest

from agents.runtime import states
from agents.runtime.approvals import ALLOW, ASK, DENY, Rule, decide


class TestTransitions:
    @pytest.mark.parametrize(("current", "target"), [
        ("queued", "running"), ("running", "awaiting_approval"), ("awaiting_approval", "queued"),
        ("running", "waiting"), ("waiting", "queued"), ("running", "needs_merge"), ("needs_merge", "succeeded"),
        ("running", "succeeded"), ("waiting", "timed_out"), ("queued", "cancelled"),
    ])
    def test_allowed_transitions_pass(self, current, target):
        states.check_transition(current, target)

    @pytest.mark.parametrize(("current", "target"), [
        ("succeeded", "running"), ("failed", "queued"), ("cancelled", "running"), ("queued", "succeeded"),
        ("waiting", "running"), ("timed_out", "queued"), ("awaiting_approval", "succeeded"),
    ])
    def test_invalid_transitions_are_refused_with_a_clear_message(self, current, target):
        with pytest.raises(states.InvalidTransition, match=f"from {current} to {target}"):
            states.check_transition(current, target)

    def test_terminal_states_have_no_way_out(self):
        assert all(not states.TRANSITIONS[s] for s in states.TERMINAL)


class TestApprovals:
    def test_read_only_by_default(self):
        assert decide("read_file", {"path": "a.py"}, []) == ALLOW
        assert decide("search", {"pattern": "x"}, []) == ALLOW
        assert decide("write_file", {"path": "a.py", "content": ""}, []) == ASK
        assert decide("shell", {"command": "ls"}, []) == ASK

    def test_the_strictest_matching_rule_wins(self):
        rules = [Rule(ALLOW, "edit_file", path_glob="src/**/*.py"), Rule(DENY, "*", path_glob="vendor/**")]
        assert decide("edit_file", {"path": "src/pkg/a.py"}, rules) == ALLOW
        assert decide("edit_file", {"path": "src/a.py"}, rules) == ALLOW
        assert decide("edit_file", {"path": "vendor/x/y.py"}, rules) == DENY
        assert decide("read_file", {"path": "vendor/x/y.py"}, rules) == DENY
        assert decide("edit_file", {"path": "docs/a.md"}, rules) == ASK

    def test_a_command_prefix_matches_whole_words_of_a_single_command(self):
        rules = [Rule(ALLOW, "shell", command_prefix="python -m pytest")]
        assert decide("shell", {"command": "python -m pytest -q tests"}, rules) == ALLOW
        assert decide("shell", {"command": "python -m pytestx"}, rules) == ASK
        assert decide("shell", {"command": "python -m pytest && rm -rf ~"}, rules) == ASK
        assert decide("shell", {"command": "python -m pytest > out.txt"}, rules) == ASK

    def test_always_for_this_session_lifts_ask_but_never_deny(self):
        rules = [Rule(DENY, "shell", command_prefix="git push")]
        allowed = frozenset({"shell"})
        assert decide("shell", {"command": "make"}, rules, session_allowed=allowed) == ALLOW
        assert decide("shell", {"command": "git push origin"}, rules, session_allowed=allowed) == DENY
