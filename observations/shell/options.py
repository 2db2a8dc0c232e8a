"""Reading a program's arguments: which words are options, which take a value, and
whether the arguments hand the program code to run. Pure functions over words; the
tables they consult are in `observations.shell.catalog`."""

from __future__ import annotations

from observations.shell import catalog
from observations.shell.syntax import Word


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
    i, n = 0, len(script)

    def skip_regex(i: int, delim: str) -> int:
        while i < n and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        if i >= n:
            raise ValueError
        return i + 1

    def address(i: int) -> int:
        if i < n and script[i] in "0123456789":
            while i < n and script[i] in "0123456789~":
                i += 1
        elif i < n and script[i] == "$":
            i += 1
        elif i < n and script[i] == "/":
            i = skip_regex(i + 1, "/")
            while i < n and script[i] in "IM":
                i += 1
        elif i + 1 < n and script[i] == "\\":
            i = skip_regex(i + 2, script[i + 1])
        return i

    try:
        while i < n:
            while i < n and script[i] in " \t\n;":
                i += 1
            if i >= n:
                return False
            i = address(i)
            if i < n and script[i] == ",":
                i += 1
                if i < n and script[i] in "+~":
                    i += 1
                i = address(i)
            while i < n and script[i] in " \t!":
                i += 1
            if i >= n:
                return False
            cmd = script[i]
            i += 1
            if cmd in "{}" or cmd in _SED_SIMPLE:
                while i < n and script[i] in "0123456789":
                    i += 1
            elif cmd == "#":
                while i < n and script[i] != "\n":
                    i += 1
            elif cmd in "aicrRwW:btTv":
                while i < n and script[i] != "\n" and not (cmd in ":btTv" and script[i] in ";}"):
                    i += 2 if script[i] == "\\" else 1
            elif cmd in "sy":
                if i >= n or script[i] in "\\\n":
                    return True
                delim = script[i]
                i = skip_regex(skip_regex(i + 1, delim), delim)
                flags_start = i
                while i < n and script[i] not in ";\n}":
                    if script[i] == "w" and cmd == "s":  # the rest of the line names a file
                        end = script.find("\n", i)
                        i = n if end < 0 else end
                        break
                    i += 1
                if cmd == "s" and "e" in script[flags_start:i]:
                    return True
            else:
                return True  # `e` runs a command; anything unknown is taken to run one
    except ValueError:
        return True
    return False


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
