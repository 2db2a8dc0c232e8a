"""Which tool calls run without a person: rules per room, strictest match wins.

Paths are matched as resolved inside the worktree (the host resolves them first), so
`src/../vendor/x` is judged as `vendor/x`. Command prefixes are matched per simple
command: an *allow* prefix covers only a single simple command (no `;`, `&`, `|`,
redirection or substitution can ride along), while a *deny* or *ask* prefix matches if
any command of a compound line starts with it, or if the line hides commands in a
substitution it cannot see into.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from typing import Any

ALLOW, ASK, DENY = "allow", "ask", "deny"
_STRICTNESS = {ALLOW: 0, ASK: 1, DENY: 2}

# Read-only by default: these run without asking when no rule says otherwise.
READ_ONLY_TOOLS = frozenset({"read_file", "list_files", "search", "await", "post_message"})
PATH_TOOLS = frozenset({"read_file", "list_files", "search", "write_file", "edit_file"})

_CONTROL = frozenset({";", "&", "&&", "|", "||", "|&", ";;", "(", ")", "\n"})
_REDIRECT = frozenset({"<", ">", ">>", "<<", "<<<", ">&", "<&", "&>", ">|", "&>>"})
_OPERATOR_CHARS = frozenset(";&|()<>")
# Words that may stand before the command a line really runs; a deny/ask prefix looks
# past them ("env rm", "time rm", "! rm", "then rm").
_PREFIX_WORDS = frozenset({
    "!", "{", "}", "then", "else", "elif", "do", "if", "while", "until", "command", "builtin",
    "exec", "env", "time", "nohup", "nice", "sudo", "xargs", "timeout",
})


@dataclass(frozen=True, slots=True)
class Command:
    """A shell line split into simple commands, as far as it can be seen."""

    parts: tuple[tuple[str, ...], ...]  # the words of each simple command
    simple: bool  # one command, no redirection, no substitution: what an allow may cover
    opaque: bool  # substitutions, expansions or odd operators: commands we cannot see


def parse_command(line: str) -> Command:
    """Split ``line`` the way bash would, erring towards "cannot see" (opaque)."""
    opaque = any(mark in line for mark in ("$(", "`", "<(", ">(", "${", "{", "}"))
    lexer = shlex.shlex(line.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""  # bash's `#` only starts a comment at the start of a word
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes
        return Command((tuple(line.split()),), simple=False, opaque=True)
    parts: list[tuple[str, ...]] = []
    current: list[str] = []
    redirected = False
    for token in tokens:
        if token and set(token) <= _OPERATOR_CHARS:
            if token in _REDIRECT:
                redirected = True
                continue
            if token not in _CONTROL:
                opaque = True  # `|(`, `;(`, `&&(`: a boundary shlex glued together
            if current:
                parts.append(tuple(current))
            current = []
        else:
            current.append(token)
    if current:
        parts.append(tuple(current))
    return Command(tuple(parts), simple=len(parts) == 1 and not redirected and not opaque, opaque=opaque)


def command_words(part: tuple[str, ...]) -> tuple[str, ...]:
    """The words from the command actually run: past `FOO=1`, `env`, `time`, `!`, `then`..."""
    words = list(part)
    while words and (words[0] in _PREFIX_WORDS or "=" in words[0] or words[0].startswith("-")):
        words.pop(0)
    return tuple(words)


def glob_match(path: str, pattern: str) -> bool:
    """Path globbing by segments: `*` stays within one directory, `**` spans any number
    (none included), so `src/*` is src's files and `src/**` everything below it."""
    return _match(path.strip("/").split("/"), pattern.strip("/").split("/"))


def _match(parts: list[str], pattern: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pattern[0]) and _match(parts[1:], pattern[1:])


@dataclass(frozen=True, slots=True)
class Rule:
    decision: str
    tool: str = "*"
    path_glob: str = ""
    command_prefix: str = ""
    command_exact: str = ""  # exactly this line (what "always" approves of a compound one)

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        if self.tool not in ("*", tool):
            return False
        if self.path_glob:
            path = arguments.get("path")
            if not isinstance(path, str) or not glob_match(path, self.path_glob):
                return False
        if self.command_prefix or self.command_exact:
            command = arguments.get("command")
            if not isinstance(command, str):
                return False
            if self.command_exact:
                return command.strip() == self.command_exact
            return self._matches_command(parse_command(command))
        return True

    def _matches_command(self, command: Command) -> bool:
        wanted = tuple(self.command_prefix.split())
        if self.decision == ALLOW:
            return command.simple and command.parts[0][: len(wanted)] == wanted
        # A strict rule errs on the strict side: any command of the line, or one hidden.
        return command.opaque or any(command_words(part)[: len(wanted)] == wanted for part in command.parts)

    def describe(self) -> str:
        what = "every tool" if self.tool == "*" else f"`{self.tool}`"
        if self.command_exact:
            what += f" running exactly `{self.command_exact}`"
        elif self.command_prefix:
            what += f" commands starting with `{self.command_prefix}`"
        if self.path_glob:
            what += f" on `{self.path_glob}`"
        return what

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


# Programs that run whatever their arguments say: "always" approves their exact line only.
_INTERPRETERS = frozenset({"bash", "sh", "zsh", "env", "python", "python3", "node", "ruby", "perl", "npx",
                           "uv", "uvx", "pipx", "xargs", "sudo", "eval", "exec", "source", "."})


def always_rule(tool: str, arguments: dict[str, Any]) -> Rule:
    """What "always, for this session" approves: the same kind of call, not the tool.

    A shell command: commands starting with the same program; exactly this line when it
    is compound or the program is an interpreter. A file tool: files in the same
    directory (not below it). Anything else: the tool.
    """
    if tool == "shell" and isinstance(arguments.get("command"), str):
        command = parse_command(arguments["command"])
        if command.simple and command.parts[0] and command.parts[0][0] not in _INTERPRETERS:
            return Rule(ALLOW, tool, command_prefix=command.parts[0][0])
        return Rule(ALLOW, tool, command_exact=arguments["command"].strip())
    if tool in PATH_TOOLS and isinstance(arguments.get("path"), str):
        directory = posixpath.dirname(arguments["path"])
        return Rule(ALLOW, tool, path_glob=f"{directory}/*" if directory else "*")
    return Rule(ALLOW, tool)


def decide(tool: str, arguments: dict[str, Any], rules: list[Rule], *, session_allowed: list[Rule] = ()) -> str:
    """allow / ask / deny for one call.

    ``session_allowed`` holds what people approved "always, for this session"; it lifts
    an ask, never a deny.
    """
    matching = [rule.decision for rule in rules if rule.matches(tool, arguments)]
    if matching:
        decision = max(matching, key=_STRICTNESS.__getitem__)
    else:
        decision = ALLOW if tool in READ_ONLY_TOOLS else ASK
    if decision == ASK and any(rule.matches(tool, arguments) for rule in session_allowed):
        return ALLOW
    return decision
