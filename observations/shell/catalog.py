"""What the hub knows about particular programs: how wrappers take their options, and
which arguments make a program run code (or another command) given on the line.

Plain data and small pure helpers; `observations.shell.programs` applies them. A
program missing here is read as a plain command; a wrapper option missing here makes
the line opaque rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Options:
    """How a program takes its options, as far as the hub needs to know.

    ``values``: options followed by a value (``-n 5``, ``--signal=TERM``). ``flags``:
    options that take none; ``None`` accepts any other option as a flag. ``numeric``:
    ``-5`` is an option (nice). Options end at ``--`` or the first operand.
    """

    values: frozenset[str] = frozenset()
    flags: frozenset[str] | None = frozenset()
    numeric: bool = False


def _o(values: str = "", flags: str | None = "", *, numeric: bool = False) -> Options:
    return Options(frozenset(values.split()), None if flags is None else frozenset(flags.split()),
                   numeric)


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A program that runs the command after its options (and ``operands`` operands)."""

    options: Options
    operands: int = 0
    # An option whose value is a shell command line (`flock -c 'cmd'`, `su -c 'cmd'`).
    command_option: frozenset[str] = frozenset()
    assignments: bool = False  # NAME=value words may precede the command (env, sudo)


WRAPPERS: dict[str, Wrapper] = {
    "timeout": Wrapper(_o("-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose"),
                       operands=1),
    "nice": Wrapper(_o("-n --adjustment", numeric=True)),
    "nohup": Wrapper(_o()),
    "time": Wrapper(_o("-f --format -o --output", "-p -a -v -q --portability --append --verbose --quiet")),
    "command": Wrapper(_o("", "-p")),
    "builtin": Wrapper(_o()),
    "exec": Wrapper(_o("-a", "-c -l")),
    "stdbuf": Wrapper(_o("-i -o -e --input --output --error")),
    "setsid": Wrapper(_o("", "-c -f -w --ctty --fork --wait")),
    "sudo": Wrapper(_o("-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role "
                       "-t --type -U --other-user -T --command-timeout",
                       "-A -b -E -H -k -K -n -P -S -B -N --askpass --background --preserve-env --set-home "
                       "--reset-timestamp --remove-timestamp --non-interactive --preserve-groups --stdin "
                       "--bell --no-update"), assignments=True),
    "doas": Wrapper(_o("-u -C", "-n -s -L")),
    "env": Wrapper(_o("-u --unset -C --chdir", "-i --ignore-environment -0 --null -v --debug -"),
                   assignments=True),
    "xargs": Wrapper(_o("-a --arg-file -d --delimiter -E --eof -I --replace -L --max-lines -n --max-args "
                        "-P --max-procs -s --max-chars --process-slot-var",
                        "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x "
                        "--exit -i -l -e")),
    "ionice": Wrapper(_o("-c --class -n --classdata", "-t --ignore")),
    "chrt": Wrapper(_o("-T --sched-runtime -P --sched-period -D --sched-deadline",
                       "-a --all-tasks -b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr "
                       "-R --reset-on-fork -v --verbose"), operands=1),
    "taskset": Wrapper(_o("", "-a --all-tasks -c --cpu-list"), operands=1),
    "flock": Wrapper(_o("-w --wait --timeout -E --conflict-exit-code",
                        "-s --shared -x --exclusive -e -n --nb --nonblock -u --unlock -o --close "
                        "-F --no-fork --verbose"), operands=1, command_option=frozenset({"-c", "--command"})),
    "chroot": Wrapper(_o("--userspec --groups", "--skip-chdir"), operands=1),
    "prlimit": Wrapper(_o("", None)),
    "setpriv": Wrapper(_o("--ruid --euid --rgid --egid --reuid --regid --groups --inh-caps --ambient-caps "
                          "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile "
                          "--landlock-access --landlock-rule --seccomp-filter",
                          "--clear-groups --keep-groups --init-groups --no-new-privs --reset-env -d --dump")),
    "unbuffer": Wrapper(_o("", "-p")),
    "strace": Wrapper(_o("-e -o -p -s -u -E -a -b -I -O -P -S -X", None)),
    "ltrace": Wrapper(_o("-e -o -p -s -u -a -A -D -F -l -n -x -L", None)),
    "valgrind": Wrapper(_o("", None)),
    "catchsegv": Wrapper(_o()),
    "fakeroot": Wrapper(_o("-l --lib --faked -s -i", "-u --unknown-is-real")),
    "tini": Wrapper(_o("-p -l", "-s -v -w -g -e")),
    "dumb-init": Wrapper(_o("-r --rewrite", "-c --single-child -v --verbose")),
    "runuser": Wrapper(_o("-u --user -g --group -G --supp-group -s --shell -w --whitelist-environment",
                          "-l --login -m -p --preserve-environment -P --pty"),
                       command_option=frozenset({"-c", "--command", "--session-command"})),
    "su": Wrapper(_o("-g --group -G --supp-group -s --shell -w --whitelist-environment",
                     "- -l --login -m -p --preserve-environment -P --pty -f --fast"), operands=1,
                  command_option=frozenset({"-c", "--command", "--session-command"})),
    "script": Wrapper(_o("-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format "
                         "-t --timing", "-a --append -e --return -f --flush -q --quiet"), operands=1,
                      command_option=frozenset({"-c", "--command"})),
    "busybox": Wrapper(_o()),
    "caffeinate": Wrapper(_o("-t -w", "-d -i -m -s -u")),
}
# `watch` and `su`-like programs join their arguments into a line for `sh -c`.
JOINS_ARGUMENTS = frozenset({"watch"})
WATCH_OPTIONS = _o("-n --interval -d --differences -q --equexit -e --errexit", "-b --beep -c --color -C "
                   "--no-color -g --chgexit -p --precise -t --no-title -w --no-wrap -x --exec")

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "posh", "rbash"})
SHELL_OPTIONS = _o("-o +o -O +O --rcfile --init-file", None)

# Interpreters: options whose value (or whose presence) is code, and options with other
# values. Without a script operand they read their program from standard input.
@dataclass(frozen=True, slots=True)
class Interpreter:
    code: frozenset[str]  # -c CODE, -e CODE, -r LIB, ...: code from the arguments
    values: frozenset[str] = frozenset()
    attached: str = ""  # short options whose value is glued on (`-I/dir`, `-0777`)


def _i(code: str, values: str = "", attached: str = "") -> Interpreter:
    return Interpreter(frozenset(code.split()), frozenset(values.split()), attached)


PYTHON = re.compile(r"(?:python|pypy)[0-9.]*(?:-dbg)?\Z")
PYTHON_OPTIONS = _i("-c -i", "-W -X --check-hash-based-pycs")
INTERPRETERS: dict[str, Interpreter] = {
    "node": _i("-e --eval -p --print -r --require --import --loader --experimental-loader -i --interactive",
               "--inspect-port --title --input-type --conditions -C"),
    "nodejs": _i("-e --eval -p --print -r --require --import --loader -i --interactive"),
    "perl": _i("-e -E -M -m -d -x", "", attached="IilF0CDdx"),
    "ruby": _i("-e -r --require -x", "-I -C -E --encoding", attached="IKWTFx0"),
    "php": _i("-r -a -B -R -F -E -d -z", "-c -n -f"),
    "lua": _i("-e -l -i"), "luajit": _i("-e -l -j -b -i"),
    "Rscript": _i("-e --eval"), "R": _i("-e -f --file"),
    "julia": _i("-e --eval -E --print -L --load -i"),
    "tclsh": _i(""), "wish": _i(""), "expect": _i("-c -i"),
    "osascript": _i("-e -i"),
    "deno": _i("eval repl -e"), "bun": _i("-e --eval -p --print x -r --preload"),
    "pwsh": _i("-c -Command -command -EncodedCommand -e"),
}
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
AWK_OPTIONS = _o("-v --assign -F --field-separator -f --file -e --source -i --include -l --load "
                 "-E --exec -W", None)

# Subcommands of tools that neither run nor install code named on the line.
SAFE_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "pip": frozenset({"list", "show", "freeze", "check", "help", "inspect", "debug", "hash", "--version",
                      "-V", "-h", "--help"}),
    "npm": frozenset({"ls", "list", "la", "ll", "view", "v", "info", "show", "outdated", "help", "prefix",
                      "root", "whoami", "ping", "search", "docs", "bugs", "repo", "explain", "why",
                      "query", "fund", "doctor", "--version", "-v", "version", "config", "get"}),
    "pnpm": frozenset({"list", "ls", "ll", "la", "why", "outdated", "help", "root", "--version", "-v",
                       "audit", "licenses", "config", "store"}),
    "yarn": frozenset({"list", "info", "why", "outdated", "help", "--version", "-v", "licenses", "config",
                       "cache", "audit"}),
    "bun": frozenset({"pm", "--version", "-v", "help", "outdated"}),
}
ALWAYS_RUN_CODE = frozenset({
    "npx", "pnpx", "bunx", "uvx", "pipx", "ssh", "docker", "podman", "nerdctl", "kubectl", "lxc",
    "systemd-run", "parallel", "nsenter", "unshare", "firejail", "bwrap", "proot", "entr", "source", ".",
    "gdb", "lldb", "dotnet",
})
# Programs that run files of the working directory whatever their arguments say (a
# Makefile, tests and their conftest.py, package scripts, build scripts): allowing one
# allows whatever the agent wrote for it.
LAUNCHERS = frozenset({
    "make", "gmake", "ninja", "meson", "just", "task", "pytest", "py.test", "tox", "nox", "jest", "vitest",
    "mocha", "phpunit", "ctest", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "go", "mvn", "gradle", "gradlew",
    "ant", "rake", "bundle", "sbt", "mix", "coverage", "uvicorn", "gunicorn", "hypercorn", "daphne", "flask",
    "django-admin", "celery", "sphinx-build", "cmake", "pre-commit", "mypy", "pylint", "flake8", "ipython",
    "jupyter", "behave", "robot", "hatch", "poe", "invoke", "fab", "doit", "scons", "bazel", "buck",
})
# Runners whose next words are the command they run (after their own options).
RUNNERS: dict[str, tuple[str, ...]] = {  # program: the subcommand that runs a command
    "uv": ("run",), "poetry": ("run",), "pipenv": ("run",), "pdm": ("run",), "hatch": ("run",),
    "conda": ("run",), "mamba": ("run",), "bundle": ("exec",), "pnpm": ("exec", "dlx"),
    "yarn": ("exec", "dlx"), "rbenv": ("exec",), "pyenv": ("exec",),
}
GIT_GLOBAL = _o("-C --git-dir --work-tree --namespace --super-prefix --list-cmds --attr-source",
                "-P --no-pager --bare --no-replace-objects --literal-pathspecs --glob-pathspecs "
                "--noglob-pathspecs --icase-pathspecs --no-optional-locks --version --help -h -v")
GIT_CODE_GLOBAL = frozenset({"-c", "--config-env", "--exec-path", "-p", "--paginate"})
GIT_CODE_SUBCOMMANDS = frozenset({"filter-branch", "filter-repo", "send-email", "instaweb", "daemon",
                                  "web--browse", "credential", "shell", "upload-pack", "receive-pack",
                                  "remote-ext", "difftool", "mergetool"})
GIT_CODE_ARGUMENTS = ("--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager",
                      "--template", "--config")
MAKE_CODE = ("-f", "--file", "--makefile", "-E", "--eval", "-C", "--directory", "-I", "--include-dir")
PYTEST = frozenset({"pytest", "py.test"})
PYTEST_CODE = ("-c", "--config-file", "-o", "--override-ini", "--pdbcls", "-W", "--pythonwarnings",
               "--tx", "--rsyncdir", "--pyargs", "--inifile")
TAR_CODE = ("--to-command", "--checkpoint-action", "--use-compress-program", "--info-script",
            "--new-volume-script", "--rsh-command", "-I", "-F")
EDITORS = frozenset({"vi", "vim", "nvim", "view", "ex", "vimdiff", "emacs", "nano"})
