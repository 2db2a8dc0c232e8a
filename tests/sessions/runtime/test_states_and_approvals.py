from __future__ import annotations

import pytest

from observations.shell import read_line
from sessions.runtime import states
from sessions.runtime.approvals import ALLOW, ASK, DENY, Rule, always_rule, decide


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
        allowed = [always_rule("shell", {"command": "make test"})]
        assert decide("shell", {"command": "make lint"}, rules, session_allowed=allowed) == ALLOW
        assert decide("shell", {"command": "curl x | sh"}, rules, session_allowed=allowed) == ASK
        assert decide("shell", {"command": "git push origin"}, rules,
                      session_allowed=[always_rule("shell", {"command": "git push"})]) == DENY

    def test_always_covers_the_same_kind_of_call_not_the_whole_tool(self):
        assert always_rule("shell", {"command": "pytest -q tests"}) == Rule(ALLOW, "shell", command_prefix="pytest")
        # An interpreter names what it runs only with -m; a script, or a compound line,
        # gets exactly that line again.
        module = always_rule("shell", {"command": "python -m pytest -q"})
        assert module == Rule(ALLOW, "shell", command_prefix="python -m pytest")
        assert decide("shell", {"command": "python -m pytest -x"}, [], session_allowed=[module]) == ALLOW
        assert decide("shell", {"command": "python evil.py"}, [], session_allowed=[module]) == ASK
        assert decide("shell", {"command": "python -m pytest -p evil"}, [], session_allowed=[module]) == ASK
        script = always_rule("shell", {"command": "python run.py"})
        assert script == Rule(ALLOW, "shell", command_exact="python run.py")
        compound = always_rule("shell", {"command": "make test && make lint"})
        assert decide("shell", {"command": "make test && make lint"}, [], session_allowed=[compound]) == ALLOW
        # A file tool: that file only. Its neighbours may be the tests a constraint protects.
        assert always_rule("edit_file", {"path": "src/pkg/a.py"}) == Rule(ALLOW, "edit_file", path_glob="src/pkg/a.py")
        scope = [always_rule("edit_file", {"path": "src/pkg/a.py"})]
        assert decide("edit_file", {"path": "src/pkg/a.py"}, [], session_allowed=scope) == ALLOW
        assert decide("edit_file", {"path": "src/pkg/b.py"}, [], session_allowed=scope) == ASK
        assert decide("edit_file", {"path": "src/pkg/deeper/a.py"}, [], session_allowed=scope) == ASK
        top = [always_rule("write_file", {"path": "README.md"})]
        assert decide("write_file", {"path": "README.md"}, [], session_allowed=top) == ALLOW
        assert decide("write_file", {"path": "test_stats.py"}, [], session_allowed=top) == ASK
        assert always_rule("write_file", {"path": "README.md"}).describe() == "`write_file` on `README.md`"
        odd = [always_rule("edit_file", {"path": "src/[a]*.py"})]  # a name with glob characters is itself
        assert decide("edit_file", {"path": "src/[a]*.py"}, [], session_allowed=odd) == ALLOW
        assert decide("edit_file", {"path": "src/ab.py"}, [], session_allowed=odd) == ASK

    @pytest.mark.parametrize("command", [
        "python -m pytest & rm -rf .", "python -m pytest; rm -rf .", "python -m pytest || curl x",
        "python -m pytest | tee out", "python -m pytest > /etc/passwd", "python -m pytest $(rm -rf .)",
        "python -m pytest `rm -rf .`", "python -m pytest\nrm -rf .", "python -m pytest 'unbalanced",
        "python -m pytest x#; rm -rf /", "python -m pytest |(rm -rf /)", "python -m pytest;(rm -rf /)",
        "python -m pytest&&(rm -rf /)", "python -m pytest {a,b}",
    ])
    def test_an_allowed_prefix_never_covers_a_second_command(self, command):
        rules = [Rule(ALLOW, "shell", command_prefix="python -m pytest")]
        assert decide("shell", {"command": command}, rules) == ASK

    @pytest.mark.parametrize("command", [
        "true && rm -rf /", "echo hi; rm -rf /", "ls | rm -rf x", "echo $(rm -rf /)", "(cd x && rm -rf y)",
        "echo x#; rm -rf /", "true;(rm -rf /)", "{ rm -rf /; }", "if true; then rm -rf /; fi",
        "FOO=1 rm -rf /", "command rm -rf /", "! rm x", "env -i rm -rf /", "time rm x",
    ])
    def test_a_deny_prefix_matches_any_command_of_a_compound_line(self, command):
        rules = [Rule(ALLOW, "shell"), Rule(DENY, "shell", command_prefix="rm")]
        assert decide("shell", {"command": command}, rules) == DENY

    def test_path_globs_work_by_directory_segments(self):
        from sessions.runtime.approvals import glob_match

        assert glob_match("src/a.py", "src/*") and not glob_match("src/pkg/a.py", "src/*")
        assert glob_match("src/pkg/a.py", "src/**") and glob_match("src/a.py", "src/**/*.py")
        assert glob_match("src/x/y/a.py", "src/**/*.py") and not glob_match("lib/a.py", "src/**/*.py")
        assert glob_match("README.md", "*") and not glob_match("docs/README.md", "*")

    def test_quoted_separators_are_part_of_one_command(self):
        line = read_line('python -c "import time; time.sleep(1)"')
        assert line.single and line.words == ("python", "-c", "import time; time.sleep(1)")
        assert line.runs_code  # code from its arguments: no prefix vouches for it
