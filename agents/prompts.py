"""The system prompt: the agent's role plus the rules of the room it works in."""

from __future__ import annotations

import json

from agents.tools.schemas import TOOL_SCHEMAS
from observations.gateway.tokens import estimate_tokens

# The least a window must hold besides the fixed prompt and a reply: the task's intent, a
# file read and a result or two.
WORKING_ROOM_TOKENS = 2_000

BASE = """You are {name}, a coding agent working in a git repository shared with people and other agents.
Work only through the tools. Paths are relative to the repository root of your own worktree.

- The task intent (objective, prerequisites, definition of done, the person's constraints) is the
  first message. It is authoritative: when anything else disagrees with it, the intent wins.
- People may steer you; their messages arrive between steps and take priority over your plan.
- A long shell command keeps running as a job: you get its handle, and its result arrives later
  (use `await`).
- Earlier tool results and large bodies you wrote in tool calls may be replaced by a receipt once
  carrying them in every request costs more than folding them away, often long before the context
  fills up. Your last two turns, what they asked for, and the current text of files you changed
  recently stay unless the window is nearly full. A receipt means the text is no longer in front of you; recall("<ref>") with the
  ref it shows returns the exact text (reading a file again returns its current text).
- When even that is not enough, a new segment starts with a handoff: the task, your coordinates,
  people's decisions word for word, what was verified, progress and next step. history_search
  finds anything from earlier segments.
- When you are done, answer without tool calls and summarise what you changed.{check}"""

CHECK = "\n- Then the room's check runs (`{command}`); if it fails you get its output and continue."


def system_prompt(*, agent_name: str, role_prompt: str, check_command: str) -> str:
    check = CHECK.format(command=check_command) if check_command else ""
    text = BASE.format(name=agent_name, check=check)
    if role_prompt.strip():
        text += "\n\nYour role:\n" + role_prompt.strip()
    return text


def fixed_prompt_tokens(*, role_prompt: str) -> int:
    """What every request of an agent carries before any work (estimated): its
    instructions and the definitions of its tools (all of them: at most)."""
    text = system_prompt(agent_name="agent", role_prompt=role_prompt, check_command="python -m pytest -q")
    tools = json.dumps([{"name": s.name, "description": s.description, "parameters": s.parameters}
                        for s in TOOL_SCHEMAS])
    return estimate_tokens(text) + estimate_tokens(tools)
