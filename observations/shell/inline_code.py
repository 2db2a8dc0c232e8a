"""Whether a program's arguments make it run code given on the line, for the programs the
hub does not follow into (awk, make, pytest, editors, build tools, remote shells, SQL
clients, package managers), and the shell lines a git subcommand runs. Plain functions
of the program's name and its words; programs.py's table calls them."""

from __future__ import annotations

import re

from observations.shell import catalog, options
from observations.shell.words import Word


def git_lines(sub: str, rest: list[str]) -> list[str]:
    """The shell lines a git subcommand runs: `rebase --exec`, `submodule foreach`."""
    lines: list[str] = []
    if sub == "rebase":
        for j, text in enumerate(rest):
            if text in ("-x", "--exec") and j + 1 < len(rest):
                lines.append(rest[j + 1])
            elif text.startswith("--exec="):
                lines.append(text.split("=", 1)[1])
            elif text.startswith("-x") and len(text) > 2:
                lines.append(text[2:])
    elif sub == "submodule" and "foreach" in rest:
        after = rest[rest.index("foreach") + 1:]
        lines.append(" ".join(t for t in after if t not in ("--recursive", "-q", "--quiet")))
    return lines


def awk_code(name: str, args: list[Word], texts: list[str]) -> bool:
    start = options.skip_options(args, catalog.AWK_OPTIONS)
    from_file = options.starts_with_option(texts, ("-f", "--file"))
    inline = options.starts_with_option(texts, ("-e", "--source", "-i", "--include", "-l", "--load"))
    return start is None or inline or not from_file


def make_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return options.starts_with_option(texts, catalog.MAKE_CODE) or any(
        "=" in t and not t.startswith("-") for t in texts)


def pytest_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return options.starts_with_option(texts, catalog.PYTEST_CODE) or any(
        options.pytest_loads_plugin(texts, k) for k in range(len(texts)))


def editor_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return any(t.startswith(("+", "-c", "-S", "--cmd", "-u", "--eval", "-l", "--load", "-f", "--funcall", "-x"))
               for t in texts)


def build_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return options.starts_with_option(texts, ("-exec", "-toolexec", "--config", "-Z")) or (
        name == "cargo" and texts[:1] == ["install"])


def remote_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return options.starts_with_option(texts, ("-e", "--rsh", "--rsync-path", "-S", "-o", "-F"))


def sql_code(name: str, args: list[Word], texts: list[str]) -> bool:
    operands = [t for t in texts if not t.startswith("-")]
    return len(operands) > 1 or options.starts_with_option(
        texts, ("-cmd", "-init", "-c", "--command", "-f", "--file", "-e", "--execute"))


def subcommand_code(name: str, args: list[Word], texts: list[str]) -> bool:
    safe = catalog.SAFE_SUBCOMMANDS["pip" if name.startswith("pip") else name]
    subcommand = next((t for t in texts if not t.startswith("-")), texts[0] if texts else "")
    return subcommand not in safe


def uv_code(name: str, args: list[Word], texts: list[str]) -> bool:
    return (texts[:1] not in (["--version"], ["help"], ["tree"], ["pip"])
            or texts[1:2] not in (["list"], ["show"], ["freeze"], ["tree"], ["check"]))


def is_pip(name: str, texts: list[str]) -> bool:
    return name in catalog.SAFE_SUBCOMMANDS or name == "pip" or re.fullmatch(r"pip[0-9.]*", name) is not None


def is_runner(name: str, texts: list[str]) -> bool:
    return name in catalog.RUNNERS and bool(texts[:1]) and texts[0] in catalog.RUNNERS[name]
