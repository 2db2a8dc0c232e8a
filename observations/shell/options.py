"""Reading a program's arguments: which words are options, which take a value, and
whether the arguments hand the program code to run. Pure functions over words; the
tables they consult are in `observations.shell.catalog`."""

from __future__ import annotations

from observations.shell import catalog
from observations.shell.words import Word


def option_name(word: str) -> str:
    """``--signal=TERM`` → ``--signal``; anything else unchanged."""
    return word.split("=", 1)[0] if word.startswith("--") else word


def starts_with_option(args: list[str], names: tuple[str, ...]) -> bool:
    """Whether an argument is one of ``names``, glued to its value (`-fX`, `--file=X`) or not."""
    for arg in args:
        if arg == "--":
            return False
        for name in names:
            if arg == name or (name.startswith("--") and arg.startswith(name + "=")) or (
                    len(name) == 2 and not name.startswith("--") and arg.startswith(name)
                    and not arg.startswith("--")):
                return True
    return False


_SED_SIMPLE = set("dDgGhHnNpPxzF=lLqQ")


def sed_script_runs_code(script: str) -> bool:
    """Whether a sed script runs a command (`e`, or the `e` flag of `s`); what the hub
    cannot read is taken to run one."""
    try:
        return _SedScript(script).runs_code()
    except ValueError:
        return True


class _SedScript:
    """A reader of one sed script, command by command; ValueError when it is cut short."""

    def __init__(self, script: str) -> None:
        self.s, self.n = script, len(script)

    def runs_code(self) -> bool:
        i = 0
        while True:
            i = self._skip(i, " \t\n;")
            if i >= self.n:
                return False
            i = self._skip(self._addresses(i), " \t!")
            if i >= self.n:
                return False
            cmd, i = self.s[i], i + 1
            if cmd in "{}" or cmd in _SED_SIMPLE:
                i = self._skip(i, "0123456789")
            elif cmd in "#aicrRwW:btTv":
                i = self._argument(cmd, i)
            elif cmd in "sy":
                i, runs = self._substitution(cmd, i)
                if runs:
                    return True
            else:
                return True  # `e` runs a command; anything unknown is taken to run one

    def _skip(self, i: int, chars: str) -> int:
        while i < self.n and self.s[i] in chars:
            i += 1
        return i

    def _regex(self, i: int, delim: str) -> int:
        """The index after the regex starting at ``i`` and closed by ``delim``."""
        while i < self.n and self.s[i] != delim:
            i += 2 if self.s[i] == "\\" else 1
        if i >= self.n:
            raise ValueError
        return i + 1

    def _addresses(self, i: int) -> int:
        i = self._address(i)
        if i < self.n and self.s[i] == ",":
            i += 1
            if i < self.n and self.s[i] in "+~":  # `addr,+N`, `addr,~N`
                i += 1
            i = self._address(i)
        return i

    def _address(self, i: int) -> int:
        s, n = self.s, self.n
        if i < n and s[i] in "0123456789":
            return self._skip(i, "0123456789~")
        if i < n and s[i] == "$":
            return i + 1
        if i < n and s[i] == "/":
            return self._skip(self._regex(i + 1, "/"), "IM")
        if i + 1 < n and s[i] == "\\":
            return self._regex(i + 2, s[i + 1])
        return i

    def _argument(self, cmd: str, i: int) -> int:
        """The end of a command's text argument: a comment or a file name runs to the end
        of the line; a label stops at `;` or `}` too."""
        s, n = self.s, self.n
        if cmd == "#":
            end = s.find("\n", i)
            return n if end < 0 else end
        while i < n and s[i] != "\n" and not (cmd in ":btTv" and s[i] in ";}"):
            i += 2 if s[i] == "\\" else 1
        return i

    def _substitution(self, cmd: str, i: int) -> tuple[int, bool]:
        """The end of an `s` or `y` command at its delimiter ``i``, and whether it runs one."""
        s, n = self.s, self.n
        if i >= n or s[i] in "\\\n":
            return i, True
        delim = s[i]
        i = self._regex(self._regex(i + 1, delim), delim)
        flags_start = i
        while i < n and s[i] not in ";\n}":
            if s[i] == "w" and cmd == "s":  # the rest of the line names a file
                end = s.find("\n", i)
                i = n if end < 0 else end
                break
            i += 1
        return i, cmd == "s" and "e" in s[flags_start:i]


def option_width(args: list[Word], i: int, options: catalog.Options) -> int | None:
    """How many words option ``args[i]`` takes (1 or 2), or None if it is unknown."""
    text = args[i].text
    if text.startswith("--"):
        name = option_name(text)
        if name in options.values:
            return 1 if "=" in text else 2
        if options.flags is None or name in options.flags:
            return 1
        return None
    if options.numeric and text[1:].isascii() and text[1:].isdigit():
        return 1
    if text in options.values:
        return 2
    if options.flags is None or text in options.flags:
        return 1
    # A cluster (`-sk5`): flags, then at most one value option whose value follows.
    for k, letter in enumerate(text[1:], start=1):
        option = "-" + letter
        if option in options.values:
            return 1 if k + 1 < len(text) else 2
        if option not in options.flags:
            return None
    return 1


def skip_options(args: list[Word], options: catalog.Options) -> int | None:
    """Index of the first operand after ``args``' options, or None at an unknown option."""
    i = 0
    while i < len(args):
        text = args[i].text
        if text == "--":
            return i + 1
        if not text.startswith("-") or text == "-":
            return i
        step = option_width(args, i, options)
        if step is None:
            return None
        i += step
    return i


def interpreter_runs_code(args: list[Word], spec: catalog.Interpreter) -> bool:
    i = 0
    while i < len(args):
        text = args[i].text
        if text == "--":
            return i + 1 >= len(args)
        if not text.startswith("-") or text == "-":
            return text == "-" or text in spec.code  # `deno eval`, `bun x`
        name = option_name(text)
        if name in spec.code or (len(text) > 2 and not text.startswith("--") and (
                "-" + text[1] in spec.code)):
            return True
        if not text.startswith("--") and len(text) > 2 and text[1] in spec.attached:
            i += 1
            continue
        i += 2 if name in spec.values and "=" not in text else 1
    return True  # no script: the program comes from standard input


def sed_runs_code(texts: list[str]) -> bool:
    if "--sandbox" in texts:
        return False  # GNU sed's sandbox mode refuses e, r and w
    scripts, i, operands = [], 0, []
    while i < len(texts):
        text = texts[i]
        if text in ("-e", "--expression") and i + 1 < len(texts):
            scripts.append(texts[i + 1])
            i += 2
            continue
        if text.startswith("--expression="):
            scripts.append(text.split("=", 1)[1])
        elif text.startswith("-e") and len(text) > 2:
            scripts.append(text[2:])
        elif starts_with_option([text], ("-f", "--file")):
            return True  # a script file may hold `e`
        elif text in ("-l", "--line-length"):
            i += 1
        elif not text.startswith("-") or text == "-":
            operands.append(text)
        i += 1
    if not scripts:
        if not operands:
            return True
        scripts = operands[:1]
    return any(sed_script_runs_code(script) for script in scripts)


def pytest_loads_plugin(texts: list[str], k: int) -> bool:
    """pytest's ``-p NAME`` imports a plugin named on the line; ``-p no:NAME`` only blocks one."""
    text = texts[k]
    if text == "-p":
        value = texts[k + 1] if k + 1 < len(texts) else ""
    elif text.startswith("-p") and not text.startswith("--"):
        value = text[2:]
    else:
        return False
    return not value.startswith("no:")
