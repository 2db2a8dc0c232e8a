"""Which tool calls run without a person: rules per room, strictest match wins.

Paths are matched as resolved inside the worktree (the host resolves them first), so
`src/../vendor/x` is judged as `vendor/x`.

Shell lines are read by `observations.shell`, which follows every program a line runs
through wrappers and their options, `bash -c`, `eval`, `$(...)`, `find -exec`, `xargs`
and absolute paths. A *deny* or *ask* prefix matches a line that runs a program starting
with it anywhere, and a line that names it where the hub cannot tell naming from running
(inside code given to an interpreter, a part it cannot see into); a line that merely
could run it (a hidden part, a program running code from its arguments, its name as an
argument, or a launcher that runs files of the worktree: `python x.py`, `python -m …`,
`bash script.sh`, `./tool`, `make`, `pytest`, `npm run`) makes a deny rule ask a person
instead of allowing: the agent may have written anything into those files (a
`conftest.py` that runs `rm -rf`). An *allow* prefix covers only a single plain command:
one command alone, fully visible, its words starting with the prefix, the prefix
reaching past every wrapper (`timeout 60 python -m pytest`, not `timeout`), and nothing
on it running code from its arguments. A deny always wins: nothing lifts it.
"""

from __future__ import annotations

import glob
import posixpath
import re
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from agents.tools import registry
from observations.shell import ShellLine, read_line
from observations.shell.catalog import INTERPRETERS, LAUNCHERS, PYTHON, SHELLS

ALLOW, ASK, DENY = "allow", "ask", "deny"
_STRICTNESS = {ALLOW: 0, ASK: 1, DENY: 2}
# How far a rule matches a call: it certainly does, it might (a deny rule then asks), no.
MATCH, MAYBE, NONE = 2, 1, 0

# Read-only by default: these run without asking when no rule says otherwise.
READ_ONLY_TOOLS = registry.READ_ONLY
PATH_TOOLS = registry.PATH_TOOLS
# Tools whose first argument names what they do: "always" for `git status` is `git status`.
SUBCOMMAND_TOOLS = frozenset({
    "git", "cargo", "go", "npm", "pnpm", "yarn", "bun", "deno", "uv", "poetry", "pip", "pip3", "docker",
    "podman", "kubectl", "helm", "terraform", "gh", "brew", "apt", "apt-get", "dnf", "conda", "dotnet",
    "rustup", "nix", "gem", "bundle", "composer", "systemctl", "mvn", "gradle", "cmake", "ruff", "mypy",
})

read_shell_line = lru_cache(maxsize=1024)(read_line)


@dataclass(frozen=True, slots=True)
class Rule:
    decision: str
    tool: str = "*"
    path_glob: str = ""
    command_prefix: str = ""
    command_exact: str = ""  # exactly this line (what "always" approves of most lines)

    def match(self, tool: str, arguments: dict[str, Any]) -> int:
        """MATCH, MAYBE (only for deny and ask rules: the line could hide it) or NONE."""
        if self.tool not in ("*", tool):
            return NONE
        if self.path_glob:
            path = arguments.get("path")
            if not isinstance(path, str) or not glob_match(path, self.path_glob):
                return NONE
        if self.command_prefix or self.command_exact:
            command = arguments.get("command")
            if not isinstance(command, str):
                return NONE
            if self.command_exact:
                return MATCH if command.strip() == self.command_exact else NONE
            return self._match_line(read_shell_line(command))
        return MATCH

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        return self.match(tool, arguments) == MATCH

    def _match_line(self, line: ShellLine) -> int:
        wanted = tuple(self.command_prefix.split())
        if self.decision == ALLOW:
            covered = (line.single and not line.opaque and not line.runs_code
                       and line.words[: len(wanted)] == wanted and len(wanted) > line.program_at)
            return MATCH if covered else NONE
        key = (posixpath.basename(wanted[0]), *wanted[1:])
        if any(invocation.key[: len(key)] == key for invocation in line.invocations):
            return MATCH
        mentioned = _mentions(line, key)
        if mentioned and (line.opaque or line.runs_code):
            return MATCH  # named where the hub cannot tell naming from running: it counts as running
        if mentioned or line.opaque or line.runs_code or runs_worktree_files(line):
            return MAYBE
        return NONE

    def describe(self) -> str:
        what = "every tool" if self.tool == "*" else code(self.tool)
        if self.command_exact:
            what += f" running exactly {code(self.command_exact)} again, nothing else"
        elif self.command_prefix and self.decision == ALLOW:
            what += (f" commands starting with {code(self.command_prefix)} that run alone: no other command, "
                     "pipe, redirection, variable, glob, wrapper or code in their arguments")
        elif self.command_prefix:
            what += (f" commands running {code(self.command_prefix)} in any way (through wrappers, bash -c, "
                     "eval, a path)")
        if self.path_glob:
            what += f" on {code(self.path_glob)}"
        return what

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


# Where the machine's own programs live (shown read-only in the sandbox); a program named
# by any other path (`./x`, `bin/x`, `/tmp/x`, the worktree's own absolute path) is a file
# someone may have written.
_SYSTEM_PROGRAMS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/opt/")


def runs_worktree_files(line: ShellLine) -> bool:
    """Whether the line starts a program that runs files of the worktree: a launcher
    (`make`, `pytest`, `npm`), an interpreter or shell given a script or a module (`-m`
    looks in the working directory first), or a program named by a path outside the
    system's trees."""
    for invocation in line.invocations:
        if invocation.wrapper or not invocation.argv:
            continue
        program, first = invocation.program, invocation.argv[0]
        if program in LAUNCHERS or ("/" in first and not first.startswith(_SYSTEM_PROGRAMS)):
            return True  # a launcher, or a program named by a path outside the system's trees
        if (PYTHON.match(program) or program in INTERPRETERS or program in SHELLS) and any(
                not word.startswith("-") for word in invocation.argv[1:]):
            return True
    return False


def _mentions(line: ShellLine, key: tuple[str, ...]) -> bool:
    """Whether the program of ``key`` is named among the line's words or in its text
    (inside code given to an interpreter, in a part the reader could not follow)."""
    n = len(key)
    for invocation in line.invocations:
        words = [posixpath.basename(w) for w in invocation.argv]
        if any(tuple(words[i : i + n]) == key for i in range(len(words))):
            return True
    # A word boundary that is not inside a name or an option (`rmdir`, `shutil.rmtree`,
    # `--rm`), but is after `${X:-`.
    pattern = r"(?:(?<=:-)|(?<![\w.-]))" + r"\s+".join(re.escape(word) for word in key) + r"(?![\w.-])"
    return re.search(pattern, line.text) is not None


def code(text: str) -> str:
    """``text`` as a Markdown code span: fenced by one backtick more than its longest run
    of them (and a space inside where it starts or ends with one), so a command holding
    backticks reads back whole (agents.templatetags: code_spans)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


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


def always_rule(tool: str, arguments: dict[str, Any]) -> Rule:
    """What "always, for this session" approves: the same kind of call, not the tool.

    A shell command: for a plain command, commands starting with the same program (with
    its subcommand for tools like git, `python -m <module>` for interpreters) that are
    plain too; for anything else (wrappers, programs running code from their arguments,
    several commands, redirections, interpreters running a script) exactly this line. A
    file tool: this file, and no other (its neighbours may be what a constraint protects).
    Anything else: the tool.
    """
    if tool in registry.SHELL_TOOLS and isinstance(arguments.get("command"), str):
        line = read_shell_line(arguments["command"])
        prefix = _always_prefix(line)
        if prefix:
            return Rule(ALLOW, tool, command_prefix=" ".join(prefix))
        return Rule(ALLOW, tool, command_exact=arguments["command"].strip())
    if tool in PATH_TOOLS and isinstance(arguments.get("path"), str):
        return Rule(ALLOW, tool, path_glob=glob.escape(arguments["path"].strip("/")))
    return Rule(ALLOW, tool)


def _always_prefix(line: ShellLine) -> tuple[str, ...] | None:
    if not line.plain or any(not word or any(c.isspace() for c in word) for word in line.words):
        return None
    words = line.words
    program = posixpath.basename(words[0])
    if PYTHON.match(program) or program in INTERPRETERS or program in SHELLS:
        # `python -m pytest` names what it runs; `python script.py` does not.
        return words[: line.program_at + 1] if line.program_at else None
    if program in SUBCOMMAND_TOOLS:
        return words[:2] if len(words) > 1 and not words[1].startswith("-") else None
    return words[:1]


def describe_line(command: str) -> list[str]:
    """What a person is asked about: each program the line runs, and what stays hidden."""
    line = read_shell_line(command)
    # A module run with `python -m` is its own invocation (rules on it match), but its
    # interpreter's line already shows it whole, unless the module runs code of its own.
    seen = [invocation.describe() for invocation in line.invocations if not invocation.wrapper and not (
            invocation.via and invocation.via[-1].endswith(" -m") and not invocation.runs_code)]
    return seen + [f"cannot be seen into: {reason}" for reason in line.hidden]


def decide(tool: str, arguments: dict[str, Any], rules: list[Rule], *, session_allowed: list[Rule] = ()) -> str:
    """allow / ask / deny for one call.

    ``session_allowed`` holds what people approved "always, for this session"; it lifts
    an ask, never a deny.
    """
    found = []
    for rule in rules:
        level = rule.match(tool, arguments)
        if level == MATCH:
            found.append(rule.decision)
        elif level == MAYBE:
            found.append(ASK)
    decision = max(found, key=_STRICTNESS.__getitem__) if found else (ALLOW if tool in READ_ONLY_TOOLS else ASK)
    if decision == ASK and any(rule.match(tool, arguments) == MATCH for rule in session_allowed):
        return ALLOW
    return decision
