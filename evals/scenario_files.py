"""Reading a scenario file (YAML or JSON) into a Scenario, every problem of it named at
once (ScenarioError), before anything runs. Plain Python: no Django import (the
`script:` provider loads scenarios in the worker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.scenario import (
    BEHAVIOUR_CHECKS,
    DECISIONS,
    DEFAULT_PROSE,
    DEFAULT_RULES,
    KINDS,
    REQUEST_CHECKS,
    TOOLS,
    TOP_KEYS,
    AgentStep,
    Call,
    Check,
    Scenario,
    ScenarioError,
    Turn,
)


def load_scenario(path: Path | str) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(path), [f"cannot be read: {exc}"]) from None
    raw = parse_text(text, source=str(path), yaml_syntax=path.suffix.lower() in (".yaml", ".yml"))
    return scenario_from(raw, source=str(path), default_name=path.name.split(".")[0])


def parse_text(text: str, *, source: str, yaml_syntax: bool) -> Any:
    if yaml_syntax:
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(source, [f"is not valid YAML: {exc}"]) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ScenarioError(source, [f"is not valid JSON: {exc}"]) from None


def scenario_from(raw: Any, *, source: str, default_name: str = "scenario") -> Scenario:
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise ScenarioError(source, ["a scenario is a mapping (name, kind, repo, task, turns, checks)"])
    v = _Reader(problems)
    for key in sorted(set(raw) - TOP_KEYS):
        problems.append(f"{key}: unknown field (fields: {', '.join(sorted(TOP_KEYS))})")
    name = v.text(raw, "name", "", default=default_name)
    if name and not all(c.isalnum() or c in "-_" for c in name):
        problems.append(f"name: {name!r} may hold only letters, digits, '-' and '_'")
    kind = v.text(raw, "kind", "", required=True)
    if kind and kind not in KINDS:
        problems.append(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    window = v.integer(raw, "window", "", default=16_000, low=4_000)
    output_budget = v.integer(raw, "output_budget", "", default=1_000, low=100)
    if window and output_budget and output_budget >= window:
        problems.append("output_budget: must be smaller than window")
    files = _repo(v, raw.get("repo"), problems)
    rules = tuple(_rule(v, item, f"rules[{i}]", with_reason=False)
                  for i, item in enumerate(v.items(raw, "rules", "", default=list(DEFAULT_RULES))))
    approvals = tuple(_rule(v, item, f"approvals[{i}]", with_reason=True)
                      for i, item in enumerate(v.items(raw, "approvals", "", default=[])))
    task = raw.get("task")
    if not isinstance(task, dict):
        problems.append("task: required, a mapping with title, objective and constraints")
        task = {}
    title = v.text(task, "title", "task.", required=True)
    objective = v.text(task, "objective", "task.", required=True)
    constraints = v.text(task, "constraints", "task.", default="")
    for key in sorted(set(task) - {"title", "objective", "constraints"}):
        problems.append(f"task.{key}: unknown field (fields: title, objective, constraints)")
    turns = tuple(_turn(v, item, i, problems) for i, item in enumerate(v.items(raw, "turns", "", required=True)))
    if turns and turns[0].reset:
        problems.append("turns[0].reset: the first turn has nothing to reset")
    checks = tuple(_check(v, item, f"checks[{i}]", len(turns), problems)
                   for i, item in enumerate(v.items(raw, "checks", "", required=True)))
    prose = tuple(v.text({"p": p}, "p", f"handoff_prose[{i}] as ") for i, p in
                  enumerate(v.items(raw, "handoff_prose", "", default=[DEFAULT_PROSE])))
    if problems:
        raise ScenarioError(source, problems)
    return Scenario(
        name=name, kind=kind, description=v.text(raw, "description", "", default=""), window=window,
        output_budget=output_budget, files=files, check_command=v.text(raw, "check_command", "", default=""),
        rules=rules, approvals=approvals, title=title, objective=objective, constraints=constraints,
        turns=turns, checks=checks, handoff_prose=prose, raw=raw,
    )


class _Reader:
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def text(self, obj: dict, key: str, where: str, *, required: bool = False, default: str = "") -> str:
        if key not in obj or obj[key] is None:
            if required:
                self.problems.append(f"{where}{key}: required")
            return default
        value = obj[key]
        if not isinstance(value, str):
            self.problems.append(f"{where}{key}: must be text, not {type(value).__name__}")
            return default
        if required and not value.strip():
            self.problems.append(f"{where}{key}: must not be empty")
        return value

    def integer(self, obj: dict, key: str, where: str, *, default: int, low: int = 0) -> int:
        value = obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append(f"{where}{key}: must be a whole number")
            return default
        if value < low:
            self.problems.append(f"{where}{key}: must be at least {low}")
        return value

    def items(self, obj: dict, key: str, where: str, *, required: bool = False, default: list | None = None) -> list:
        if key not in obj or obj[key] is None:
            if required:
                self.problems.append(f"{where}{key}: required, a list")
            return list(default or [])
        value = obj[key]
        if not isinstance(value, list):
            self.problems.append(f"{where}{key}: must be a list")
            return []
        if required and not value:
            self.problems.append(f"{where}{key}: must not be empty")
        return value


def _repo(v: _Reader, repo: Any, problems: list[str]) -> dict[str, str]:
    if repo is None:
        problems.append("repo: required, a mapping with files (and optional padding)")
        return {}
    if not isinstance(repo, dict):
        problems.append("repo: must be a mapping with files and padding")
        return {}
    for key in sorted(set(repo) - {"files", "padding"}):
        problems.append(f"repo.{key}: unknown field (fields: files, padding)")
    files = _repo_files(repo.get("files") or {}, problems)
    for i, item in enumerate(v.items(repo, "padding", "repo.")):
        padded = _padding(v, item, f"repo.padding[{i}]", problems)
        if padded is not None:
            files[padded[0]] = padded[1]
    if not files:
        problems.append("repo: needs at least one file")
    return files


def _repo_files(raw_files: Any, problems: list[str]) -> dict[str, str]:
    if not isinstance(raw_files, dict):
        problems.append("repo.files: must map paths to their text")
        return {}
    files: dict[str, str] = {}
    for path, text in raw_files.items():
        if not _relative_path(path):
            problems.append(f"repo.files[{path!r}]: must be a relative path inside the repository")
        elif not isinstance(text, str):
            problems.append(f"repo.files[{path!r}]: the file's text must be text")
        else:
            files[path] = text
    return files


def _padding(v: _Reader, item: Any, where: str, problems: list[str]) -> tuple[str, str] | None:
    """(path, text) of one padding file, or None (with the problems noted)."""
    if not isinstance(item, dict):
        problems.append(f"{where}: must be a mapping with path and lines")
        return None
    path = item.get("path")
    lines = v.integer(item, "lines", f"{where}.", default=0, low=1)
    if not isinstance(path, str) or not _relative_path(path):
        problems.append(f"{where}.path: must be a relative path inside the repository")
        return None
    for key in sorted(set(item) - {"path", "lines", "line", "insert"}):
        problems.append(f"{where}.{key}: unknown field (fields: path, lines, line, insert)")
    line = v.text(item, "line", f"{where}.", default="{n:05d} " + path + ": routine record, nothing to act on")
    insert = item.get("insert", {})
    if not isinstance(insert, dict) or not all(str(k).isdigit() and isinstance(t, str)
                                              for k, t in insert.items()):
        problems.append(f"{where}.insert: must map line numbers to text")
        insert = {}
    insert = {int(k): t for k, t in insert.items()}
    return path, padding_text(line, lines, insert)


def padding_text(line: str, lines: int, insert: dict[int, str]) -> str:
    """A large, deterministic file: ``line`` formatted with its number, and the given
    lines inserted where asked (e.g. a tool output that carries an injection)."""
    out = []
    for n in range(1, lines + 1):
        if n in insert:
            out.append(insert[n])
        out.append(line.replace("{n:05d}", f"{n:05d}").replace("{n}", str(n)))
    return "\n".join(out) + "\n"


def _relative_path(path: Any) -> bool:
    return (isinstance(path, str) and bool(path) and not path.startswith(("/", "\\")) and ".." not in path.split("/")
            and not path.startswith(".atrium") and not path.startswith(".git"))


def _rule(v: _Reader, item: Any, where: str, *, with_reason: bool) -> dict[str, str]:
    if not isinstance(item, dict):
        v.problems.append(f"{where}: must be a mapping with tool and decision")
        return {}
    allowed = {"tool", "decision", "path_glob", "command_prefix"} | ({"reason"} if with_reason else set())
    for key in sorted(set(item) - allowed):
        v.problems.append(f"{where}.{key}: unknown field (fields: {', '.join(sorted(allowed))})")
    tool = v.text(item, "tool", f"{where}.", required=True)
    if tool and tool not in TOOLS:
        v.problems.append(f"{where}.tool: {tool!r} is not one of {', '.join(TOOLS)}")
    choices = ("approve", "deny") if with_reason else DECISIONS
    decision = v.text(item, "decision", f"{where}.", required=True)
    if decision and decision not in choices:
        v.problems.append(f"{where}.decision: {decision!r} is not one of {', '.join(choices)}")
    rule = {"tool": tool, "decision": decision, "path_glob": v.text(item, "path_glob", f"{where}."),
            "command_prefix": v.text(item, "command_prefix", f"{where}.")}
    if with_reason:
        rule["reason"] = v.text(item, "reason", f"{where}.")
    return rule


TURN_KEYS = {"person", "replaces", "constraints", "reset", "agent", "answer"}


def _turn(v: _Reader, item: Any, index: int, problems: list[str]) -> Turn:
    where = f"turns[{index}]"
    if not isinstance(item, dict):
        problems.append(f"{where}: must be a mapping (person, agent, reset, ...)")
        return Turn(index + 1, "", (), None, False, (), "")
    for key in sorted(set(item) - TURN_KEYS):
        problems.append(f"{where}.{key}: unknown field (fields: {', '.join(sorted(TURN_KEYS))})")
    person = v.text(item, "person", f"{where}.", required=index > 0)
    if index == 0 and person:
        problems.append(f"{where}.person: the first turn is the task itself; put its words in task")
    replaces = item.get("replaces", [])
    if not isinstance(replaces, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                                 for n in replaces):
        problems.append(f"{where}.replaces: must be a list of decision numbers (3 for D3)")
        replaces = []
    constraints = item.get("constraints")
    if constraints is not None and not isinstance(constraints, str):
        problems.append(f"{where}.constraints: must be text (the task's new constraints)")
        constraints = None
    reset = item.get("reset", False)
    if not isinstance(reset, bool):
        problems.append(f"{where}.reset: must be true or false")
        reset = False
    steps = []
    for j, step in enumerate(v.items(item, "agent", f"{where}.")):
        steps.append(_step(v, step, f"{where}.agent[{j}]"))
    return Turn(index + 1, person, tuple(replaces), constraints, reset, tuple(steps),
                v.text(item, "answer", f"{where}.", default=f"Turn {index + 1} is done."))


def _step(v: _Reader, step: Any, where: str) -> AgentStep:
    if not isinstance(step, dict):
        v.problems.append(f"{where}: must be a mapping with say and calls")
        return AgentStep("", ())
    for key in sorted(set(step) - {"say", "calls"}):
        v.problems.append(f"{where}.{key}: unknown field (fields: say, calls)")
    calls = []
    for k, call in enumerate(v.items(step, "calls", f"{where}.")):
        at = f"{where}.calls[{k}]"
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            v.problems.append(f"{at}: must be a mapping with tool and its arguments")
            continue
        if call["tool"] not in TOOLS:
            v.problems.append(f"{at}.tool: {call['tool']!r} is not one of {', '.join(TOOLS)}")
            continue
        calls.append(Call(call["tool"], {k2: val for k2, val in call.items() if k2 != "tool"}))
    return AgentStep(v.text(step, "say", f"{where}.", default=""), tuple(calls))


CHECK_PARAMS = {
    "in_force": ({"text"}, {"from_turn"}),
    "superseded": ({"text"}, {"from_turn"}),
    "stays_in_tool_result": ({"text"}, set()),
    "coordinates": ({"path"}, {"from_turn"}),
    "latest_person_message": ({"text", "turn"}, set()),
    "files_touched": (set(), {"expected"}),
    "untouched": ({"path_glob"}, set()),
    "last_answer_mentions": ({"text"}, set()),
    "file_contains": ({"path", "text"}, set()),
}


def _check(v: _Reader, item: Any, where: str, turns: int, problems: list[str]) -> Check:
    if not isinstance(item, dict) or len({"request", "behaviour"} & set(item)) != 1:
        problems.append(f"{where}: must name one check, as request: <kind> or behaviour: <kind>")
        return Check("request", "", {})
    family = "request" if "request" in item else "behaviour"
    kind = item[family]
    known = REQUEST_CHECKS if family == "request" else BEHAVIOUR_CHECKS
    if kind not in known:
        problems.append(f"{where}.{family}: {kind!r} is not one of {', '.join(known)}")
        return Check(family, str(kind), {})
    required, optional = CHECK_PARAMS[kind]
    params = {k: val for k, val in item.items() if k != family}
    for key in sorted(required - set(params)):
        problems.append(f"{where}.{key}: required for {kind}")
    for key in sorted(set(params) - required - optional):
        problems.append(f"{where}.{key}: unknown for {kind} (takes {', '.join(sorted(required | optional))})")
    for key in ("text", "path", "path_glob"):
        if key in params and (not isinstance(params[key], str) or not params[key].strip()):
            problems.append(f"{where}.{key}: must be non-empty text")
    for key in ("from_turn", "turn"):
        if key in params:
            turn = params[key]
            if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= max(turns, 1):
                problems.append(f"{where}.{key}: must be a turn number from 1 to {turns}")
    if "expected" in params and (not isinstance(params["expected"], list)
                                 or not all(isinstance(p, str) for p in params["expected"])):
        problems.append(f"{where}.expected: must be a list of paths")
    return Check(family, kind, params)
