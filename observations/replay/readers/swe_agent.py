"""SWE-agent 1.x ``.traj`` files (1.0.x XML function calling, 1.1.x native tool calls).

``history`` is the conversation as the agent kept it: system prompt, task, then
assistant messages (with ``tool_calls``, or with the call written in the text as
``<function=name><parameter=key>value</parameter></function>``) each followed by their
observation messages (role ``tool`` linked by ``tool_call_ids``, or role ``user``).
``trajectory`` has one entry per model call, including calls whose answer could not be
parsed: SWE-agent re-queries those with an error message and drops both from the
history. Such calls become steps with ``kept_in_history=False`` and the error as
``notice`` (read back from the next call's ``query``).

Observations are taken from the history as the model first saw them. Where SWE-agent's
own ``last_n_observations`` processor has replaced one by "Old environment output: (N
lines omitted)", the full text is rebuilt from ``trajectory[k].observation`` with the
``OBSERVATION:`` template, because the evaluator replays its policies on raw outputs.
The bash session is persistent, so each command is recognised in the working directory
the previous step left (``trajectory[k-1].state.working_dir``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from observations.replay.actions import PathScope, editor_accesses, shell_accesses
from observations.replay.readers._common import (
    content_text,
    expect_dict,
    expect_list,
    uploaded_root,
)
from observations.replay.trajectory import (
    FileAccess,
    Step,
    ToolEvent,
    Trajectory,
    TrajectoryFormatError,
)
from observations.shell.syntax import split_words

SOURCE = "swe-agent"
_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)</parameter>", re.DOTALL)
_MASKED = re.compile(r"^\s*Old environment output: \(\d+ lines omitted\)\s*$")
_EDITOR_FLAGS = {
    "--view_range": 2,
    "--file_text": 1,
    "--old_str": 1,
    "--new_str": 1,
    "--insert_line": 1,
}


def read_swe_agent(data: Any, *, path: str) -> Trajectory:
    root_obj = expect_dict(data, "file")
    history = expect_list(root_obj.get("history"), "history")
    entries = root_obj.get("trajectory")
    entries = expect_list(entries, "trajectory") if entries is not None else []
    for i, message in enumerate(history):
        expect_dict(message, f"history[{i}]")
    for i, entry in enumerate(entries):
        expect_dict(entry, f"trajectory[{i}]")
    if len(history) < 2 or history[0].get("role") != "system" or history[1].get("role") != "user":
        raise TrajectoryFormatError("history[0..1]: expected the system prompt, then the task")
    system_prompt = content_text(history[0].get("content"), "history[0].content")
    task = content_text(history[1].get("content"), "history[1].content")
    root = uploaded_root(task) or "/testbed"
    scope = PathScope(root)
    turns = _turns(history)
    info = root_obj.get("info") if isinstance(root_obj.get("info"), dict) else {}

    steps: list[Step] = []
    t = 0  # next history turn to pair with a trajectory entry
    cwd = root
    for k, entry in enumerate(entries or [None] * len(turns)):
        if entry is not None and (t >= len(turns) or not _same_call(entry, turns[t][0])):
            steps.append(
                _dropped_step(len(steps), entry, entries[k + 1] if k + 1 < len(entries) else None)
            )
            continue
        if t >= len(turns):
            break
        assistant, observations = turns[t]
        t += 1
        steps.append(_step(len(steps), t, assistant, observations, entry, scope, cwd))
        state = entry.get("state") if entry is not None else None
        if isinstance(state, dict) and isinstance(state.get("working_dir"), str):
            cwd = state["working_dir"]
    if t < len(turns):
        raise TrajectoryFormatError(
            f"history: {len(turns) - t} assistant turns have no trajectory entry (file cut short?)"
        )
    return Trajectory(
        source=SOURCE,
        trajectory_id=_stem(path),
        path=path,
        model=_model_name(root_obj.get("replay_config")),
        system_prompt=system_prompt,
        task=task,
        steps=tuple(steps),
        meta={
            "repo_root": root,
            "exit_status": info.get("exit_status"),
            "agent_version": info.get("swe_agent_version"),
            "model_stats": info.get("model_stats"),
        },
    )


def _turns(
    history: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]]:
    """(assistant message, its observation messages with history indices), in order."""
    turns: list[tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]] = []
    for i, message in enumerate(history[2:], start=2):
        if message.get("role") == "assistant":
            turns.append((message, []))
        elif turns:
            turns[-1][1].append((i, message))
        else:
            raise TrajectoryFormatError(f"history[{i}]: a second task message before any answer")
    return turns


def _same_call(entry: dict[str, Any], assistant: dict[str, Any]) -> bool:
    if str(entry.get("action") or "").strip() != str(assistant.get("action") or "").strip():
        return False
    response = entry.get("response")
    content = content_text(assistant.get("content"), "history.content")
    return not response or not content or response == content


def _step(
    index: int,
    turn: int,
    assistant: dict[str, Any],
    observations: list[tuple[int, dict[str, Any]]],
    entry: dict[str, Any] | None,
    scope: PathScope,
    cwd: str,
) -> Step:
    text = content_text(assistant.get("content"), f"turn {turn}.content")
    calls, in_text = _calls(assistant, text, turn)
    outputs = [(message, _observation_text(i, message, entry)) for i, message in observations]
    by_id = {
        call_id: output
        for message, output in outputs
        for call_id in (message.get("tool_call_ids") or [])
        if isinstance(call_id, str)
    }
    events = []
    unclaimed = [output for message, output in outputs if not message.get("tool_call_ids")]
    for call_id, tool, arguments in calls:
        output = by_id.get(call_id)
        if output is None:
            output = unclaimed.pop(0) if unclaimed else ""
        events.append(
            ToolEvent(
                call_id=call_id,
                tool=tool,
                arguments=arguments,
                output=output,
                accesses=_accesses(tool, arguments, output, scope, cwd),
                call_in_text=in_text,
            )
        )
    notice = "\n\n".join(unclaimed) if not calls and unclaimed else None
    return Step(index=index, assistant_text=text, events=tuple(events), notice=notice)


def _dropped_step(index: int, entry: dict[str, Any], following: dict[str, Any] | None) -> Step:
    """A model call SWE-agent re-queried: its answer and the error never stayed in history."""
    response = str(entry.get("response") or "")
    notice = None
    query = (following or {}).get("query") or (following or {}).get("messages")
    if isinstance(query, list) and len(query) >= 2:
        last, before = query[-1], query[-2]
        if (
            isinstance(last, dict)
            and isinstance(before, dict)
            and last.get("role") == "user"
            and before.get("role") == "assistant"
            and content_text(before.get("content"), "query.content") == response
        ):
            notice = content_text(last.get("content"), "query.content")
    return Step(index=index, assistant_text=response, notice=notice, kept_in_history=False)


def _calls(
    assistant: dict[str, Any], text: str, turn: int
) -> tuple[list[tuple[str, str, dict[str, Any]]], bool]:
    """(call id, tool, arguments) of one answer, and whether they are written in its text."""
    native = assistant.get("tool_calls")
    if isinstance(native, list) and native:
        calls = []
        for j, call in enumerate(native):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise TrajectoryFormatError(f"turn {turn}.tool_calls[{j}]: no function name")
            calls.append(
                (
                    str(call.get("id") or f"turn-{turn}-{j}"),
                    function["name"],
                    _arguments(function.get("arguments")),
                )
            )
        return calls, False
    written = _FUNCTION.findall(text)
    if written:
        return [
            (f"turn-{turn}-{j}", name, {key: value for key, value in _PARAMETER.findall(body)})
            for j, (name, body) in enumerate(written)
        ], True
    action = str(assistant.get("action") or "").strip()
    if not action:
        return [], False
    return [(f"turn-{turn}-0", *_from_action(action))], False


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"_raw": raw}
        return parsed if isinstance(parsed, dict) else {"_raw": raw}
    return {}


def _from_action(action: str) -> tuple[str, dict[str, Any]]:
    """Tool and arguments from SWE-agent's one-line ``action`` string."""
    head = action.split(None, 1)[0]
    if head == "submit":
        return "submit", {}
    if head != "str_replace_editor":
        return "bash", {"command": action}
    words = split_words(action)
    if words is None:
        return "str_replace_editor", {"_raw": action}
    arguments: dict[str, Any] = {}
    if len(words) > 1:
        arguments["command"] = words[1]
    if len(words) > 2:
        arguments["path"] = words[2]
    i = 3
    while i < len(words):
        width = _EDITOR_FLAGS.get(words[i], 1)
        values = words[i + 1 : i + 1 + width]
        if words[i] == "--view_range" and all(v.lstrip("-").isdigit() for v in values):
            arguments["view_range"] = [int(v) for v in values]
        else:
            arguments[words[i].lstrip("-")] = " ".join(values)
        i += 1 + width
    return "str_replace_editor", arguments


def _observation_text(index: int, message: dict[str, Any], entry: dict[str, Any] | None) -> str:
    text = content_text(message.get("content"), f"history[{index}].content")
    if _MASKED.match(text) and entry is not None and isinstance(entry.get("observation"), str):
        return "OBSERVATION:\n" + entry["observation"]
    return text


def _accesses(
    tool: str, arguments: dict[str, Any], output: str, scope: PathScope, cwd: str
) -> tuple[FileAccess, ...]:
    if tool == "bash" and isinstance(arguments.get("command"), str):
        return shell_accesses(arguments["command"], scope=scope, cwd=cwd, output=output)
    if tool == "str_replace_editor":
        return editor_accesses(arguments, scope=scope, output=output, cwd=cwd)
    return ()


def _model_name(replay_config: Any) -> str:
    if isinstance(replay_config, str):
        try:
            replay_config = json.loads(replay_config)
        except ValueError:
            return ""
    agent = replay_config.get("agent") if isinstance(replay_config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    return str(model.get("name") or "") if isinstance(model, dict) else ""


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".traj")
