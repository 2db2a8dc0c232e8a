"""The documentation stands alone: every file it points to is in the repository, and the
README's configuration table lists exactly the environment variables the code reads.

Variables are found with ``ast``: calls of hub.env's readers (``env``, ``envint``, …),
``os.environ``/``env`` look-ups with a literal name, and, for the few reads whose name is
computed, the names listed in COMPUTED (each must still be spelled somewhere in the code,
so the list cannot outlive the code). A computed read that is not listed fails the test:
whoever adds one says which variables it reads. docker/compose.yaml's ``${NAME}``
substitutions are variables the operator sets, so they count too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = sorted(p for folder in ("hub", "endpoint", "evals", "sessions", "rooms", "agents", "observations", "docker")
              for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts) + [ROOT / "manage.py"]
ENV_READERS = {"env", "envbool", "envint", "envfloat", "envlist", "envsecret"}

# Reads whose variable name is computed, by (file, enclosing function): the names they read.
COMPUTED = {
    # hub.env's readers themselves: their callers name the variables (envsecret's NAME_FILE too).
    ("hub/env.py", "*"): set(),
    # ATRIUM_FOLD_OVERRIDES: a variable per field of the gateway's Budget.
    ("hub/settings.py", "<module>"): {"ATRIUM_FOLD_TRIGGER_RATIO", "ATRIUM_FOLD_TARGET_RATIO",
                                      "ATRIUM_FOLD_MIN_FREED_TOKENS", "ATRIUM_FOLD_MAX_POSTPONEMENTS",
                                      "ATRIUM_SEGMENT_RATIO", "ATRIUM_FOLD_WORKING_SET_STEPS",
                                      "ATRIUM_FOLD_OPTIONAL_MIN_FREED"},
    ("agents/providers/factory.py", "_endpoint"): {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"},
    ("agents/providers/factory.py", "_check_profile_url"): {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"},
    ("agents/providers/factory.py", "operator_url"): {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"},
    # Each provider kind's key (PROVIDER_KINDS' prefixes).
    ("agents/providers/factory.py", "upstream_endpoint"): {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"},
    ("agents/providers/addresses.py", "allowed_from"): {"ATRIUM_BASE_URL_ALLOW"},
    ("agents/providers/ambient.py", "withheld_headers"): {"OPENAI_CUSTOM_HEADERS", "ANTHROPIC_CUSTOM_HEADERS"},
    # The operator's ATRIUM_SANDBOX_PASS_ENV, handed to commands, not read as settings.
    ("agents/confinement.py", "sandbox_policy"): set(),
    # The test run's own folders and services, set again by each xdist worker.
    ("hub/pytest_plugin.py", "pytest_load_initial_conftests"): {"ATRIUM_DATA_DIR", "ATRIUM_REPLAY_DIR", "REDIS_URL"},
    ("hub/pytest_plugin.py", "_keep_apart"): {"CELERY_QUEUE", "CHANNELS_PREFIX"},
}
# Read, but not the hub's settings: Django's own, defaulted by the entry points, and the
# test run's bookkeeping between pytest-xdist's controller and its workers.
# The hub sets the ATRIUM_PUSH_* ones for its own pre-receive check (remote/smart_http.py).
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE", "PYTEST_XDIST_WORKER", "ATRIUM_TEST_RUN_SET", "ATRIUM_PUSH_MAIN",
                "ATRIUM_PUSH_MAX_BYTES", "ATRIUM_PUSH_MAX_FILES", "ATRIUM_PUSH_ONLY_REF"}


def _environ(node: ast.AST) -> bool:
    """``os.environ``, or a mapping named ``env``/``environ`` standing in for it."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id in {"env", "environ"})


def _key(call: ast.Call) -> ast.AST | None:
    """The variable-name argument of an environment read, or None if ``call`` is none."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in ENV_READERS:
        return call.args[0] if call.args else None
    if isinstance(func, ast.Attribute) and func.attr == "getenv":
        return call.args[0] if call.args else None
    if isinstance(func, ast.Attribute) and func.attr == "get" and _environ(func.value):
        return call.args[0] if call.args else None
    return None


def _reads(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """(name argument, enclosing function) of every environment read in a module."""
    found: list[tuple[ast.AST, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call) and (key := _key(node)) is not None:
            found.append((key, function))
            if isinstance(node.func, ast.Name) and node.func.id == "envsecret" and isinstance(key, ast.Constant):
                found.append((ast.Constant(f"{key.value}_FILE", lineno=key.lineno), function))
        if isinstance(node, ast.Subscript) and _environ(node.value) and isinstance(node.ctx, ast.Load):
            found.append((node.slice, function))
        if isinstance(node, ast.Compare) and any(_environ(c) for c in node.comparators):
            found.append((node.left, function))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def code_env_reads() -> dict[str, set[str]]:
    """{variable: {files reading it}}; raises on a computed read COMPUTED does not list."""
    reads: dict[str, set[str]] = {}
    unlisted = []
    for path in CODE:
        relative = path.relative_to(ROOT).as_posix()
        for key, function in _reads(ast.parse(path.read_text())):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names = {key.value}
            elif (relative, function) in COMPUTED or (relative, "*") in COMPUTED:
                names = COMPUTED.get((relative, function), COMPUTED.get((relative, "*"), set()))
            else:
                unlisted.append(f"{relative}:{key.lineno} in {function}: {ast.unparse(key)}")
                continue
            for name in names - NOT_SETTINGS:
                reads.setdefault(name, set()).add(relative)
    assert not unlisted, f"environment reads with a computed name; list their variables in COMPUTED: {unlisted}"
    return reads


def compose_variables() -> set[str]:
    return set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (ROOT / "docker" / "compose.yaml").read_text()))


def readme_table() -> set[str]:
    """Every backticked NAME in the first cell of the README's configuration table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Configuration (environment)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])}


def test_the_reader_finds_direct_computed_and_compose_variables():
    reads = code_env_reads()
    assert {"DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE", "LOG_LEVEL", "ATRIUM_SANDBOX_PASS_ENV"} <= reads.keys()
    assert {"ATRIUM_FOLD_TRIGGER_RATIO", "OPENAI_BASE_URL", "OPENAI_API_KEY"} <= reads.keys()
    assert {"POSTGRES_PASSWORD", "ATRIUM_PORT"} <= compose_variables()
    assert "DJANGO_SETTINGS_MODULE" not in reads


def test_every_computed_variable_is_still_spelled_in_the_code():
    code = "\n".join(path.read_text() for path in CODE)
    for names in COMPUTED.values():
        for name in names:
            assert f'"{name}"' in code or name.split("_", 1)[1] in code, name


def test_the_readme_table_lists_every_variable_the_code_reads():
    reads = code_env_reads()
    missing = {name: sorted(files) for name, files in reads.items() if name not in readme_table()}
    assert not missing, f"read by the code, not in the README's configuration table: {missing}"
    assert not compose_variables() - readme_table(), "set through docker/compose.yaml, not in the README"


def test_the_readme_table_lists_only_variables_something_reads():
    stale = readme_table() - code_env_reads().keys() - compose_variables()
    assert not stale, f"in the README's configuration table, read by nothing: {sorted(stale)}"


# --- references --------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TICKED = re.compile(r"`([^`\n]+)`")
FILE_ENDINGS = (".py", ".md", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".txt", ".lock", ".sh", ".html")
# Backticked names that are not the repository's files, and what they are.
NOT_REPOSITORY_FILES = {
    "vendor/": "a folder of the eval scenarios' own repositories",
    "supervisor.json": "written by `manage.py start` in the data folder",
    "./compare": "how to name a directory called compare on the command line",
    "source/id": "a trajectory's key",
}


def _is_path(text: str) -> bool:
    """A backticked word that names a file or folder of the repository: no spaces, not a
    pattern, URL, option, absolute or home path, environment variable or assignment."""
    if " " in text or text.startswith(("/", "~", "$", "-", ".atrium")) or re.search(r"[<>*{}:=]", text):
        return False
    if re.match(r"[A-Z][A-Z0-9_]+/", text):  # DATA_DIR/evals: a folder under a setting
        return False
    return "/" in text or text.endswith(FILE_ENDINGS)


def _exists(doc: Path, target: str) -> bool:
    target = target.split("#", 1)[0]
    if (ROOT / target).exists() or (doc.parent / target).exists():
        return True
    # A bare file name next to its folder's name in the text (`state.py` of sessions/runtime/).
    return "/" not in target.rstrip("/") and any(ROOT.glob(f"[!.]*/**/{target}"))


def broken_references(doc: Path) -> list[str]:
    text = doc.read_text()
    broken = [f"link {t}" for t in LINK.findall(text)
              if not re.match(r"[a-z]+:|#", t) and not _exists(doc, t)]
    broken += [f"`{t}`" for t in TICKED.findall(text)
               if _is_path(t) and t not in NOT_REPOSITORY_FILES and not _exists(doc, t)]
    return broken


def test_every_file_the_docs_point_to_is_in_the_repository():
    broken = {doc.relative_to(ROOT).as_posix(): refs for doc in DOCS if (refs := broken_references(doc))}
    assert not broken, broken


def test_the_docs_cite_nothing_outside_the_repository():
    """Documents and trackers that live elsewhere (an ARCHITECTURE.md, a brief, issue
    numbers) mean nothing to a reader of the repository."""
    for doc in DOCS:
        text = doc.read_text()
        assert "ARCHITECTURE.md" not in text, doc
        assert not re.search(r"\bthe (project )?brief\b|\bissue #?\d+", text, re.I), doc


def test_the_reference_check_catches_a_missing_file(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("See [the design](missing.md), `hub/nowhere.py` and `ARCH.md`; "
                   "`README.md`, [up](#top), `--json`, `/healthz`, `vendor/` are fine.")
    assert broken_references(doc) == ["link missing.md", "`hub/nowhere.py`", "`ARCH.md`"]
