"""What a boundary delivers into a session's context: people's steers and the chat that
mentions its agent as people's words (decisions), other agents' posts as theirs. Plain
Python, shared by the worker's step loop and the gateway endpoint's proxied sessions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from observations.gateway.context import SessionContext
from sessions.runtime.mentions import render_agent_message


@dataclass(frozen=True, slots=True)
class Input:
    """A person's message for this session, read at a step boundary."""

    id: int
    seq: int  # the room chat's sequence number
    kind: str  # "steer", "chat" (a chat message that mentions the agent) or "agent" (another agent's post that does)
    author: str
    text: str
    replaces: tuple[int, ...] = ()  # decisions (D<n>) a steer replaces


def deliver_inputs(ctx: SessionContext, inputs: list[Input], emit: Callable[[str, dict[str, Any]], None]) -> bool:
    """People's messages (steers, chat that mentions the agent) and agents' posts into
    the context, each logged as delivered; whether a person's was among them."""
    for item in inputs:
        if item.kind == "agent":
            # Another agent's words: shown as such, never a decision people made.
            ctx.add_user(render_agent_message(item.author, item.text), kind="agent")
            emit("input.delivered", {"message_id": item.id, "kind": "agent", "author": item.author})
            continue
        decision = ctx.add_person(kind=item.kind, author=item.author, text=item.text, replaces=item.replaces)
        emit("input.delivered", {"message_id": item.id, "kind": item.kind, "author": item.author,
                                 "decision": decision.label, "replaces": list(item.replaces)})
    return any(i.kind != "agent" for i in inputs)


def chat_cursor_after(cursor: int, inputs: list[Input]) -> int:
    """Room chat up to this seq was looked at for mentions."""
    return max([cursor] + [i.seq for i in inputs if i.kind == "chat"])
