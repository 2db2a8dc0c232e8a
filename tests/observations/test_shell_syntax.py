from __future__ import annotations

import pytest

from observations.shell.syntax import parse_command


def argvs(text: str) -> list[list[list[str]]]:
    chain = parse_command(text)
    assert chain is not None
    return [[command.argv for command in pipeline] for pipeline in chain]


def test_chains_split_on_and_or_semicolon_and_newline():
    assert argvs("cd /testbed && cat a.py; ls\ngrep x b.py || true") == [
        [["cd", "/testbed"]],
        [["cat", "a.py"]],
        [["ls"]],
        [["grep", "x", "b.py"]],
        [["true"]],
    ]


def test_pipes_group_commands_into_one_pipeline():
    assert argvs("nl -ba f.py | sed -n '3,4p'") == [[["nl", "-ba", "f.py"], ["sed", "-n", "3,4p"]]]


def test_quotes_and_escapes_are_removed_like_bash_does():
    assert argvs("""grep -n "def \\"x\\"" 'a b.py' c\\ d.py""") == [
        [["grep", "-n", 'def "x"', "a b.py", "c d.py"]]
    ]


def test_line_continuation_joins_lines():
    assert argvs("sed -i 's/a/b/' x.py && \\\nsed -i 's/c/d/' y.py") == [
        [["sed", "-i", "s/a/b/", "x.py"]],
        [["sed", "-i", "s/c/d/", "y.py"]],
    ]


def test_here_document_body_is_kept_on_its_redirect_and_not_read_as_commands():
    chain = parse_command("cat <<'EOF' > out.py\nimport os\nprint('&& ; |')\nEOF\npython out.py")
    assert chain is not None
    [[cat], [python]] = chain
    assert cat.argv == ["cat"]
    assert [(r.op, r.target.text, r.body) for r in cat.redirects] == [
        ("<<", "EOF", "import os\nprint('&& ; |')\n"), (">", "out.py", None)]
    assert cat.stdout_target() is not None and cat.stdin_redirected()
    assert python.argv == ["python", "out.py"]


def test_indented_here_document_ends_at_tab_indented_delimiter():
    assert argvs("cat <<-END > f\n\tbody\n\tEND\nls") == [[["cat"]], [["ls"]]]
    [[cat], _] = parse_command("cat <<-END > f\n\tbody\n\t\tmore\n\tEND\nls") or [[None], None]
    assert cat.redirects[0].body == "body\nmore\n"


def test_two_here_documents_on_one_line_each_get_their_body():
    [[first, second]] = parse_command("cat <<A | python3 - <<B\none\nA\ntwo\nB") or [[None, None]]
    assert (first.redirects[0].body, second.redirects[0].body) == ("one\n", "two\n")
    [[cut]] = parse_command("python3 <<EOF\nprint(1)") or [[None]]  # ended by the input's end, as bash does
    assert cut.redirects[0].body == "print(1)\n"


def test_descriptor_redirections_are_not_output_files():
    [[command]] = parse_command("python x.py 2>&1 >/dev/null") or [[None]]
    assert command.argv == ["python", "x.py"]
    assert [(r.fd, r.op, r.target.text) for r in command.redirects] == [
        (2, ">&", "1"),
        (None, ">", "/dev/null"),
    ]
    [[dup]] = parse_command("echo hi >&2") or [[None]]
    assert dup.stdout_target() is None


def test_substitutions_variables_and_globs_make_a_word_opaque():
    [[command]] = parse_command('cat $(find . -name x) "$HOME/a" *.py plain.py') or [[None]]
    assert [w.opaque for w in command.words] == [False, True, True, True, False]


def test_quoted_glob_characters_are_literal():
    [[command]] = parse_command("sed -n '1,$p' 'a*.py'") or [[None]]
    assert [w.opaque for w in command.words] == [False, False, False, False]


def test_comments_are_dropped():
    assert argvs("# read it again\nsed -n 5p a.py  # line five") == [[["sed", "-n", "5p", "a.py"]]]


@pytest.mark.parametrize(
    "text",
    [
        "cat 'unterminated",
        'grep "unterminated',
        "echo $(unclosed",
        "cat > ",
        "cat <<EOF",  # a here-document with no body line at all: the text was cut
    ],
)
def test_malformed_shell_is_unparseable(text):
    assert parse_command(text) is None
