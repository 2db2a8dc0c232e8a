"""What a shell call was: a test run or not, and how it ended.

Plain Python (no Django), shared by the live loop alarm and the trace analysis so the
two never disagree about what "a failing test run" is.
"""

from __future__ import annotations

import functools
import posixpath
import re

from observations.shell import read_line

# Programs whose run is a test run, and subcommands that make a build tool run tests.
_TEST_PROGRAMS = frozenset({
    "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest", "prove",
    "unittest", "nose2",
})
_TEST_SUBCOMMANDS = {
    "go": {"test"}, "cargo": {"test", "nextest"}, "npm": {"test", "t"}, "yarn": {"test"}, "pnpm": {"test"},
    "make": {"test", "check"}, "mvn": {"test", "verify"}, "gradle": {"test"}, "./gradlew": {"test"},
    "dotnet": {"test"}, "bundle": {"exec"}, "uv": {"run"}, "poetry": {"run"},
}
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")

# How tool texts report an exit code: "exit 1 after 0.4 s" (a shell call that
# finished in its wait bound), "job job-… `cmd` finished: exit 1 after …" (a job).
_SHELL_EXIT = re.compile(r"^exit (-?\d+) after ")
_JOB_EXIT = re.compile(r"job (job-[0-9a-f]+) `[^\n]*` finished: exit (-?\d+) after ")
_JOB_HANDLE = re.compile(r"continues as job (job-[0-9a-f]+)")


def normalize_command(command: str) -> str:
    """The command as compared for "identical": surrounding and repeated blanks ignored."""
    return " ".join(command.split())


@functools.lru_cache(maxsize=4096)  # agents run the same few commands again and again
def is_test_command(command: str, check_command: str = "") -> bool:
    """True when ``command`` runs a test suite: a known runner anywhere in the line, or
    the room's own check command."""
    if check_command and normalize_command(command) == normalize_command(check_command):
        return True
    return any(_runs_tests(invocation.argv) for invocation in read_line(command).invocations)


def _runs_tests(words: tuple[str, ...]) -> bool:
    if not words:
        return False
    program = posixpath.basename(words[0])
    if program in _TEST_PROGRAMS:
        return True
    if _PYTHON.match(program):
        return len(words) > 2 and words[1] == "-m" and words[2] in _TEST_PROGRAMS
    wanted = _TEST_SUBCOMMANDS.get(words[0]) or _TEST_SUBCOMMANDS.get(program)
    if not wanted or len(words) < 2 or words[1] not in wanted:
        return False
    if words[1] in {"exec", "run"}:  # bundle exec rspec, uv run pytest
        return _runs_tests(words[2:])
    return True


def shell_exit_code(text: str) -> int | None:
    """The exit code a shell result reports on its first line, if it finished."""
    match = _SHELL_EXIT.match(text)
    return int(match.group(1)) if match else None


def job_exit_codes(text: str) -> dict[str, int]:
    """Every "job … finished: exit N" a text reports (job results, await results)."""
    return {handle: int(code) for handle, code in _JOB_EXIT.findall(text)}


def yielded_job(text: str) -> str | None:
    """The job a shell result continued as, if it outlasted its wait bound."""
    match = _JOB_HANDLE.search(text)
    return match.group(1) if match else None
