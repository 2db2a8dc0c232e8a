"""OpenHands evaluation ``output.jsonl``: one run per line.

``history`` is OpenHands' event stream. The ``system`` action carries the system prompt
and the first user ``message`` the task. Every agent action with ``tool_call_metadata``
came from a model call; actions sharing one ``model_response.id`` are one step (parallel
tool calls), and their results are the observations whose ``cause`` is the action's
``id``. Run results are rendered as OpenHands shows them to the model
(``CmdOutputObservation.to_agent_observation``: content with the metadata prefix and
suffix, working directory, interpreter and exit code lines); other results are their
``content``. An error observation with no ``cause`` is a rejected tool call: a step with
no events and the error as ``notice``. Per-call tokens come from
``metrics.token_usages``, matched by ``response_id``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from observations.replay.actions import PathScope, editor_accesses, shell_accesses
from observations.replay.readers._common import (
    content_text,
    expect_dict,
    expect_list,
    optional_int,
    uploaded_root,
)
from observations.replay.trajectory import (
    FileAccess,
    Step,
    ToolEvent,
    Trajectory,
    TrajectoryFormatError,
)

SOURCE = "openhands"


def read_openhands(data: Any, *, path: str) -> Trajectory:
    """One line of an ``output.jsonl``, already parsed."""
    run = expect_dict(data, "line")
    history = expect_list(run.get("history"), "history")
    for i, event in enumerate(history):
        expect_dict(event, f"history[{i}]")
    system_prompt = next((_message(e) for e in history if e.get("action") == "system"), None)
    task = next(
        (
            _message(e)
            for e in history
            if e.get("source") == "user" and e.get("action") == "message"
        ),
        None,
    )
    if system_prompt is None or task is None:
        raise TrajectoryFormatError("history: no system prompt or no user task message")
    root = uploaded_root(task) or _first_working_dir(history) or "/workspace"
    scope = PathScope(root)
    usages = _usages(run.get("metrics"))
    results = {
        e["cause"]: e for e in history if "observation" in e and isinstance(e.get("cause"), int)
    }

    steps: list[Step] = []
    cwd = root
    current_response: str | None = None
    seen_task = False
    for event in history:
        if "action" in event and event.get("source") == "agent" and event.get("tool_call_metadata"):
            metadata = expect_dict(
                event["tool_call_metadata"], f"event {event.get('id')}.tool_call_metadata"
            )
            response = (
                metadata.get("model_response")
                if isinstance(metadata.get("model_response"), dict)
                else {}
            )
            response_id = str(response.get("id") or f"event-{event.get('id')}")
            result = results.get(event.get("id"))
            tool_event = _tool_event(event, metadata, response, result, scope, cwd)
            if result is not None and event.get("action") == "run":
                cwd = _working_dir(result) or cwd
            if response_id == current_response and steps:
                steps[-1] = replace(steps[-1], events=steps[-1].events + (tool_event,))
                continue
            current_response = response_id
            usage = usages.get(response_id, {})
            steps.append(
                Step(
                    index=len(steps),
                    assistant_text=_response_text(response, event),
                    events=(tool_event,),
                    reported_input_tokens=optional_int(usage.get("prompt_tokens")),
                    reported_output_tokens=optional_int(usage.get("completion_tokens")),
                    cached_input_tokens=optional_int(usage.get("cache_read_tokens")),
                )
            )
        elif event.get("observation") == "error" and not isinstance(event.get("cause"), int):
            current_response = None
            steps.append(Step(index=len(steps), assistant_text="", notice=_content(event)))
        elif event.get("source") == "agent" and event.get("action") == "message":
            current_response = None
            steps.append(Step(index=len(steps), assistant_text=_message(event)))
        elif event.get("source") == "user" and event.get("action") == "message":
            if seen_task and steps:
                last = steps[-1]
                notice = (
                    _message(event)
                    if last.notice is None
                    else f"{last.notice}\n\n{_message(event)}"
                )
                steps[-1] = replace(last, notice=notice)
            seen_task = True
            current_response = None

    llm_config = (
        run.get("metadata", {}).get("llm_config") if isinstance(run.get("metadata"), dict) else None
    )
    return Trajectory(
        source=SOURCE,
        trajectory_id=str(run.get("instance_id") or path),
        path=path,
        model=str(llm_config.get("model") or "") if isinstance(llm_config, dict) else "",
        system_prompt=system_prompt,
        task=task,
        steps=tuple(steps),
        meta={"repo_root": root, "error": run.get("error"), "tools": _tool_schemas(history)},
    )


def _tool_event(
    event: dict[str, Any],
    metadata: dict[str, Any],
    response: dict[str, Any],
    result: dict[str, Any] | None,
    scope: PathScope,
    cwd: str,
) -> ToolEvent:
    call_id = str(metadata.get("tool_call_id") or f"event-{event.get('id')}")
    tool = str(metadata.get("function_name") or event.get("action"))
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    arguments = _sent_arguments(response, call_id)
    if arguments is None:
        arguments = {k: v for k, v in args.items() if k != "thought"}
    output = _observation_text(result) if result is not None else ""
    action = event.get("action")
    accesses: tuple[FileAccess, ...] = ()
    if action == "run" and isinstance(args.get("command"), str):
        accesses = shell_accesses(args["command"], scope=scope, cwd=cwd, output=output)
    elif action == "read":
        accesses = editor_accesses(
            {"command": "view", "path": args.get("path"), "view_range": args.get("view_range")},
            scope=scope,
            output=output,
            cwd=cwd,
        )
    elif action == "edit":
        accesses = editor_accesses(args, scope=scope, output=output, cwd=cwd)
    exit_code = None
    if result is not None and result.get("observation") == "run":
        exit_code = optional_int(
            ((result.get("extras") or {}).get("metadata") or {}).get("exit_code")
        )
    return ToolEvent(
        call_id=call_id,
        tool=tool,
        arguments=arguments,
        output=output,
        accesses=accesses,
        exit_code=exit_code,
    )


def _sent_arguments(response: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The arguments exactly as the model sent them, from the raw model response."""
    for choice in response.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        for call in (message or {}).get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == call_id:
                raw = (call.get("function") or {}).get("arguments")
                try:
                    parsed = json.loads(raw) if isinstance(raw, str) else raw
                except ValueError:
                    return {"_raw": raw}
                return parsed if isinstance(parsed, dict) else None
    return None


def _response_text(response: dict[str, Any], event: dict[str, Any]) -> str:
    for choice in response.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            return content_text(message.get("content"), f"event {event.get('id')}.model_response")
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    return str(args.get("thought") or "")


def _observation_text(result: dict[str, Any]) -> str:
    content = _content(result)
    if result.get("observation") != "run":
        return content
    metadata = (result.get("extras") or {}).get("metadata") or {}
    text = f"{metadata.get('prefix') or ''}{content}{metadata.get('suffix') or ''}"
    if metadata.get("working_dir"):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if metadata.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    exit_code = metadata.get("exit_code")
    if isinstance(exit_code, int) and exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def _content(event: dict[str, Any]) -> str:
    # An empty result is empty content; "message" is only the UI's summary line.
    raw = event["content"] if "content" in event else event.get("message")
    return content_text(raw, f"event {event.get('id')}.content")


def _message(event: dict[str, Any]) -> str:
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    text = args.get("content")
    return content_text(
        text if isinstance(text, str) else event.get("message") or "", f"event {event.get('id')}"
    )


def _tool_schemas(history: list[dict[str, Any]]) -> list[Any]:
    """The tool schemas sent with every request (OpenHands records them on the system event)."""
    for event in history:
        if event.get("action") == "system":
            tools = (event.get("args") or {}).get("tools")
            return tools if isinstance(tools, list) else []
    return []


def _usages(metrics: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(metrics, dict) or not isinstance(metrics.get("token_usages"), list):
        return {}
    return {
        u["response_id"]: u
        for u in metrics["token_usages"]
        if isinstance(u, dict) and isinstance(u.get("response_id"), str)
    }


def _working_dir(result: dict[str, Any]) -> str | None:
    metadata = (result.get("extras") or {}).get("metadata") or {}
    value = metadata.get("working_dir")
    return value if isinstance(value, str) and value.startswith("/") else None


def _first_working_dir(history: list[dict[str, Any]]) -> str | None:
    for event in history:
        if event.get("observation") == "run":
            found = _working_dir(event)
            if found:
                return found
    return None
