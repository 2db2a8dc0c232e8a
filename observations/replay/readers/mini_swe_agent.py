"""mini-swe-agent ``.traj.json`` (``"trajectory_format": "mini-swe-agent-1"``).

``messages[0]`` is the system prompt and ``messages[1]`` the task; then every assistant
message is one model call whose single ```` ```bash ```` block is the command, and the user
message after it is what the agent answered: the command's output
(``<returncode>..</returncode><output>..</output>``, the long-output
``<warning>/<output_head>/<elided_chars>/<output_tail>`` shape, a timeout notice, or the
raw submission) or — when the answer had zero or several bash blocks — a format error,
which becomes the step's ``notice`` and stays in the history, as mini-swe-agent keeps it.
Every command runs in a fresh shell in the environment's ``cwd`` (``cd`` does not
persist), so each one is recognised from that directory.
"""

from __future__ import annotations

import re
from typing import Any

from observations.replay.actions import PathScope, shell_accesses
from observations.replay.readers._common import content_text, expect_dict, expect_list, optional_int
from observations.replay.trajectory import Step, ToolEvent, Trajectory, TrajectoryFormatError

SOURCE = "mini-swe-agent"
FORMAT_TAG = "mini-swe-agent-1"
# mini-swe-agent's default action_regex: exactly one match is an action.
_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"^\s*<returncode>(-?\d+)</returncode>")


def read_mini_swe_agent(data: Any, *, path: str) -> Trajectory:
    root_obj = expect_dict(data, "file")
    tag = root_obj.get("trajectory_format")
    if tag != FORMAT_TAG:
        raise TrajectoryFormatError(f"trajectory_format: expected {FORMAT_TAG!r}, got {tag!r}")
    messages = expect_list(root_obj.get("messages"), "messages")
    if len(messages) < 2:
        raise TrajectoryFormatError("messages: needs at least the system prompt and the task")
    for i, message in enumerate(messages):
        expect_dict(message, f"messages[{i}]")
    if messages[0].get("role") != "system" or messages[1].get("role") != "user":
        raise TrajectoryFormatError("messages[0..1]: expected the system prompt, then the task")
    info = root_obj.get("info") if isinstance(root_obj.get("info"), dict) else {}
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    environment = config.get("environment") if isinstance(config.get("environment"), dict) else {}
    cwd = environment.get("cwd") if isinstance(environment.get("cwd"), str) else "/testbed"
    scope = PathScope(cwd)

    steps: list[Step] = []
    model = ""
    i = 2
    while i < len(messages):
        message = messages[i]
        if message.get("role") != "assistant":
            raise TrajectoryFormatError(
                f"messages[{i}]: expected an assistant message, got role {message.get('role')!r}"
            )
        text = content_text(message.get("content"), f"messages[{i}].content")
        replies: list[str] = []
        i += 1
        while i < len(messages) and messages[i].get("role") != "assistant":
            replies.append(content_text(messages[i].get("content"), f"messages[{i}].content"))
            i += 1
        usage, response_model = _usage(message)
        model = model or response_model
        steps.append(_step(len(steps), text, replies, usage, scope, cwd))

    model_config = config.get("model") if isinstance(config.get("model"), dict) else {}
    return Trajectory(
        source=SOURCE,
        trajectory_id=str(root_obj.get("instance_id") or _stem(path)),
        path=path,
        model=str(model_config.get("model_name") or model),
        system_prompt=content_text(messages[0].get("content"), "messages[0].content"),
        task=content_text(messages[1].get("content"), "messages[1].content"),
        steps=tuple(steps),
        meta={
            "repo_root": cwd,
            "exit_status": info.get("exit_status"),
            "agent_version": info.get("mini_version"),
            "model_stats": info.get("model_stats"),
        },
    )


def _step(
    index: int, text: str, replies: list[str], usage: dict[str, Any], scope: PathScope, cwd: str
) -> Step:
    actions = _ACTION.findall(text)
    events: tuple[ToolEvent, ...] = ()
    notices = replies
    if len(actions) == 1:
        output = replies[0] if replies else ""
        notices = replies[1:]
        code = _RETURNCODE.match(output)
        events = (
            ToolEvent(
                call_id=f"step-{index}",
                tool="bash",
                arguments={"command": actions[0]},
                output=output,
                accesses=shell_accesses(actions[0], scope=scope, cwd=cwd, output=output),
                exit_code=int(code.group(1)) if code else None,
                call_in_text=True,
            ),
        )
    details = usage.get("prompt_tokens_details")
    return Step(
        index=index,
        assistant_text=text,
        events=events,
        reported_input_tokens=optional_int(usage.get("prompt_tokens")),
        reported_output_tokens=optional_int(usage.get("completion_tokens")),
        cached_input_tokens=optional_int(details.get("cached_tokens"))
        if isinstance(details, dict)
        else None,
        notice="\n\n".join(notices) if notices else None,
    )


def _usage(message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    if not isinstance(response, dict):
        return {}, ""
    usage = response.get("usage")
    return (usage if isinstance(usage, dict) else {}), str(response.get("model") or "")


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.removesuffix(".json").removesuffix(".traj")
