"""File-access recognition, on command strings taken from the development set."""

from __future__ import annotations

import pytest

from observations.replay.actions import PathScope, call_kind, editor_accesses, shell_accesses
from observations.replay.trajectory import FileAccess, text_sha256

TESTBED = PathScope("/testbed")


def recognised(command: str, *, cwd: str | None = "/testbed", output: str = "text") -> list[str]:
    return [a.describe() for a in shell_accesses(command, scope=TESTBED, cwd=cwd, output=output)]


# (command as an agent wrote it, accesses as `FileAccess.describe` renders them)
REAL_COMMANDS = [
    # reads, with ranges composed through the pipeline
    ("cat django/db/models/utils.py", ["read django/db/models/utils.py"]),
    (
        "cat ./django/contrib/admin/views/autocomplete.py",
        ["read django/contrib/admin/views/autocomplete.py"],
    ),
    ("cat -n /testbed/sympy/core/basic.py", ["read sympy/core/basic.py"]),
    (
        "sed -n '853,880p' django/contrib/admin/options.py",
        ["read django/contrib/admin/options.py lines 853-880"],
    ),
    (
        "sed -n 2013p django/contrib/admin/options.py",
        ["read django/contrib/admin/options.py lines 2013-2013"],
    ),
    ("sed -n '10, 20 p' a.py", ["read a.py lines 10-20"]),
    (
        "sed -n '380,$p' django/db/models/fields/json.py",
        ["read django/db/models/fields/json.py lines 380-end"],
    ),
    ("sed -n '1,5p;10,12p' a.py", ["read a.py lines 1-5", "read a.py lines 10-12"]),
    ("sed -n '10,20p;20q' a.py", ["read a.py lines 10-20"]),
    ("sed '20q' a.py", ["read a.py lines 1-20"]),
    (
        "nl -ba lib/matplotlib/offsetbox.py | sed -n '1449,1462p'",
        ["read lib/matplotlib/offsetbox.py lines 1449-1462"],
    ),
    (
        "cat tests/utils_tests/test_html.py | sed -n '154,175p'",
        ["read tests/utils_tests/test_html.py lines 154-175"],
    ),
    (
        "head -n 20 astropy/table/tests/test_mixin.py",
        ["read astropy/table/tests/test_mixin.py lines 1-20"],
    ),
    ("head -15 django/forms/boundfield.py", ["read django/forms/boundfield.py lines 1-15"]),
    ("head django/forms/boundfield.py", ["read django/forms/boundfield.py lines 1-10"]),
    ("tail -n 20 django/forms/boundfield.py", ["read django/forms/boundfield.py last 20 lines"]),
    ("tail sympy/printing/str.py", ["read sympy/printing/str.py last 10 lines"]),
    ("tail -n +40 a.py", ["read a.py lines 40-end"]),
    ("sed -n '100,200p' a.py | head -n 10", ["read a.py lines 100-109"]),
    ("sed -n '100,200p' a.py | tail -n 10", ["read a.py lines 191-200"]),
    ("cat < a.py", ["read a.py"]),
    (
        "# Read the file again to be sure about line numbers\nsed -n '380,420p' django/db/models/fields/json.py",
        ["read django/db/models/fields/json.py lines 380-420"],
    ),
    (
        "cd /testbed && cat -n /testbed/x/y.py && sed -n 5p x/y.py",
        ["read x/y.py", "read x/y.py lines 5-5"],
    ),
    ("cd sympy && cat ../setup.py; cat core/add.py", ["read setup.py", "read sympy/core/add.py"]),
    # searches: the text reaching the model was narrowed
    ('grep -n "class Float" sympy/core/numbers.py', ["search sympy/core/numbers.py"]),
    ('grep -r "class Subs" sympy/', ["search sympy"]),
    ('grep -rn "def translate_url" django --include="*.py"', ["search django"]),
    (
        'grep -nC 5 "elif self.colnames" astropy/timeseries/core.py',
        ["search astropy/timeseries/core.py"],
    ),
    ('grep -n -A 20 "def f" a.py b.py', ["search a.py", "search b.py"]),
    ("grep -e foo -e bar a.py", ["search a.py"]),
    ('grep -rn "x"', ["search ."]),
    (
        'nl -ba sympy/polys/polytools.py | grep -A 20 "def sqf_list"',
        ["search sympy/polys/polytools.py"],
    ),
    (
        "sed -n '/def create_parser/,/return parser/p' django/core/management/base.py",
        ["search django/core/management/base.py"],
    ),
    ('git grep -n "foo"', ["search ."]),
    # listings
    ("ls -la", ["list ."]),
    ("ls -R django/template", ["list django/template"]),
    ('ls -R | grep ":$" | head -n 20', ["list ."]),
    ('find lib/matplotlib -name "_axes.py"', ["list lib/matplotlib"]),
    ('find /testbed -type f -name "*.py" | xargs grep -l "SplitArrayField" | head -5', ["list ."]),
    ("cd /workspace/x && ls", ["list /workspace/x"]),
    # writes and edits
    (
        "cat <<'EOF' > reproduce_issue.py\nimport sys\nprint(sys.argv)\nEOF",
        ["write reproduce_issue.py"],
    ),
    ("cat <<'EOF' >> notes.txt\nmore\nEOF", ["edit notes.txt"]),
    (
        "cat <<'EOF' > a/__init__.py\nEOF\ncat <<'EOF' > a/models.py\nx = 1\nEOF",
        ["write a/__init__.py", "write a/models.py"],
    ),
    (
        "sed -i '521i KeyTransform.register_lookup(KeyTransformIn)' django/db/models/fields/json.py",
        ["edit django/db/models/fields/json.py"],
    ),
    ("sed -i.bak 's/a/b/' x.py", ["edit x.py"]),
    ("sed -i -e 's/a/b/' -e 's/c/d/' x.py y.py", ["edit x.py", "edit y.py"]),
    (
        'sed -i "46,52c\\\\    def f(self):" django/db/backends/postgresql/operations.py',
        ["edit django/db/backends/postgresql/operations.py"],
    ),
    ('echo "x = 1" > settings.py', ["write settings.py"]),
    ('python -c "print(1)" > out.txt 2>&1', ["write out.txt"]),
    ("echo done | tee -a log.txt", ["edit log.txt"]),
    ("git checkout lib/matplotlib/axes/_axes.py", ["edit lib/matplotlib/axes/_axes.py"]),
    ("git checkout -- setup.py tox.ini", ["edit setup.py", "edit tox.ini"]),
    ("git restore src/a.py", ["edit src/a.py"]),
    ("patch src/a.py < fix.patch", ["edit src/a.py"]),
    ("rm reproduce_issue.py test_dummy.py", ["write reproduce_issue.py", "write test_dummy.py"]),
    (
        "mv sklearn/utils/_set_output.py_new sklearn/utils/_set_output.py",
        ["write sklearn/utils/_set_output.py_new", "write sklearn/utils/_set_output.py"],
    ),
    (
        "cp astropy/timeseries/core.py astropy/timeseries/core.py.bak",
        ["write astropy/timeseries/core.py.bak"],
    ),
    (
        "head -n 608 f.py > f.py.new && \\\ncat <<'EOF' >> f.py.new\n  x\nEOF",
        ["write f.py.new", "edit f.py.new"],
    ),
    # nothing: the effect on files or on the text is unknown
    ("python reproduce_issue.py", []),
    ("python - <<'EOF'\nopen('a.py', 'w').write('x')\nEOF", []),
    ("git apply fix.patch", []),
    ("git checkout main", []),
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", []),
    ("cat a.py | python -c 'import sys; print(len(sys.stdin.read()))'", []),
    ("cat a.py | wc -l", []),
    ("cat a.py > b.py", ["write b.py"]),
    ("tail -n 30 django/forms/boundfield.py | head -n 20", []),
    ("sed -n '2013p' django/contrib/admin/options.py | od -c", []),
    ("sed -n '$p' a.py", []),
    ("sed 's/a/b/' a.py", []),
    ('grep -r "args\\[0\\]" astropy/io/*/connect.py', []),
    ("rm reproduce_issue.py test_*.py", ["write reproduce_issue.py"]),
    ("cat $FILE", []),
    ("cat 'unterminated", []),
]


@pytest.mark.parametrize(("command", "expected"), REAL_COMMANDS)
def test_real_commands_are_recognised_exactly(command, expected):
    assert recognised(command) == expected


def test_reads_carry_the_hash_of_the_output_they_came_with():
    [access] = shell_accesses(
        "sed -n 1,2p a.py", scope=TESTBED, cwd="/testbed", output="one\ntwo\n"
    )
    assert access.content_hash == text_sha256("one\ntwo\n")
    [write] = shell_accesses("echo x > a.py", scope=TESTBED, cwd="/testbed", output="")
    assert write.content_hash is None


def test_a_read_whose_output_the_agent_cut_is_not_recorded():
    elided = "<returncode>0</returncode><output_head>a</output_head><elided_chars>9 characters elided</elided_chars>"
    assert recognised("cat big.py", output=elided) == []
    assert recognised("cat big.py > copy.py && cat small.py", output=elided) == ["write copy.py"]


def test_a_file_the_command_could_not_open_is_not_read():
    assert recognised("cat nope.py", output="cat: nope.py: No such file or directory") == []
    assert (
        recognised(
            "head -n 5 nope.py",
            output="head: cannot open 'nope.py' for reading: No such file or directory",
        )
        == []
    )
    assert (
        recognised(
            "sed -n 1,5p nope.py", output="sed: can't read nope.py: No such file or directory"
        )
        == []
    )


def test_relative_paths_need_a_known_working_directory():
    assert recognised("cat a.py", cwd=None) == []
    assert recognised("cat /testbed/a.py", cwd=None) == ["read a.py"]
    assert recognised("cd /testbed/pkg && cat a.py", cwd=None) == ["read pkg/a.py"]


@pytest.mark.parametrize(
    ("path", "cwd", "key"),
    [
        ("/testbed/a/b.py", "/testbed", "a/b.py"),
        ("b.py", "/testbed/a", "a/b.py"),
        ("./a//b.py", "/testbed", "a/b.py"),
        ("../b.py", "/testbed/a/c", "a/b.py"),
        ("/testbed", "/", "."),
        ("/testbed/", "/", "."),
        (".", "/testbed", "."),
        ("/tmp/x.py", "/testbed", "/tmp/x.py"),
        ("/testbedding/x.py", "/testbed", "/testbedding/x.py"),
        ("~/x.py", "/testbed", None),
    ],
)
def test_paths_are_keyed_relative_to_the_repository_root(path, cwd, key):
    assert TESTBED.key(path, cwd) == key


def test_the_same_file_read_two_ways_gets_the_same_key():
    [by_absolute] = shell_accesses("cat /testbed/x.py", scope=TESTBED, cwd="/", output="")
    [by_relative] = shell_accesses("sed -n 1,20p x.py", scope=TESTBED, cwd="/testbed", output="")
    assert by_absolute.path == by_relative.path == "x.py"
    assert by_absolute.overlaps(by_relative)


WORKSPACE = PathScope("/workspace/ponylang__ponyc__0.1")
VIEW = "Here's the result of running `cat -n` on /workspace/ponylang__ponyc__0.1/src/a.c:\n     1\tint x;\n"


@pytest.mark.parametrize(
    ("arguments", "output", "expected"),
    [
        (
            {"command": "view", "path": "/workspace/ponylang__ponyc__0.1/src/a.c"},
            VIEW,
            ["read src/a.c"],
        ),
        (
            {
                "command": "view",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "view_range": [650, 700],
            },
            VIEW,
            ["read src/a.c lines 650-700"],
        ),
        (
            {
                "command": "view",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "view_range": [100, -1],
            },
            VIEW,
            ["read src/a.c lines 100-end"],
        ),
        (
            {
                "command": "view",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "view_range": "[724, 741]",
            },
            VIEW,
            ["read src/a.c lines 724-741"],
        ),
        (
            {
                "command": "view",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "view_range": [1, -1],
            },
            VIEW,
            ["read src/a.c"],
        ),
        (
            {"command": "view", "path": "/workspace/ponylang__ponyc__0.1"},
            "Here's the files and directories up to 2 levels deep in /workspace/ponylang__ponyc__0.1, excluding hidden items:",
            ["list ."],
        ),
        (
            {
                "command": "view",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "view_range": [100, 150],
            },
            "ERROR:\nInvalid `view_range` parameter: [100, 150]. Its second element `150` should be smaller",
            [],
        ),
        (
            {"command": "view", "path": "/workspace/ponylang__ponyc__0.1/src/b.c"},
            "OBSERVATION:\nThe path /workspace/ponylang__ponyc__0.1/src/b.c does not exist. Please provide a valid path.",
            [],
        ),
        (
            {"command": "view", "path": "/workspace/ponylang__ponyc__0.1/src/a.c"},
            "OBSERVATION:\n<NOTE>This file is too large to display entirely. Showing abbreviated version.</NOTE>",
            [],
        ),
        (
            {"command": "view", "path": "/workspace/ponylang__ponyc__0.1/src/a.c"},
            VIEW
            + "   626\t  DONE();\n   627\t// (NOT | AMP |<response clipped><NOTE>Due to the max output limit</NOTE>",
            ["read src/a.c lines 1-626"],
        ),
        (
            {
                "command": "create",
                "path": "/workspace/ponylang__ponyc__0.1/t.pony",
                "file_text": "x",
            },
            "",
            ["write t.pony"],
        ),
        (
            {
                "command": "str_replace",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "old_str": "a",
                "new_str": "b",
            },
            "",
            ["edit src/a.c"],
        ),
        (
            {
                "command": "insert",
                "path": "/workspace/ponylang__ponyc__0.1/src/a.c",
                "insert_line": 3,
                "new_str": "b",
            },
            "",
            ["edit src/a.c"],
        ),
        (
            {"command": "undo_edit", "path": "/workspace/ponylang__ponyc__0.1/src/a.c"},
            "",
            ["edit src/a.c"],
        ),
        ({"command": "view"}, "", []),
    ],
)
def test_editor_calls_are_recognised_from_their_arguments(arguments, output, expected):
    found = editor_accesses(arguments, scope=WORKSPACE, output=output)
    assert [a.describe() for a in found] == expected


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ((), "other"),
        (("list",), "list"),
        (("list", "search"), "search"),
        (("read", "search"), "read"),
        (("read", "edit"), "edit"),
        (("edit", "write"), "write"),
    ],
)
def test_a_call_is_classed_by_its_strongest_access(kinds, expected):
    assert call_kind(tuple(FileAccess(kind, "a.py") for kind in kinds)) == expected
