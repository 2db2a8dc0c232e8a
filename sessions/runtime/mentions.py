"""Whether a chat message is addressed to an agent (``@name``, not ``@namesake``), and
the guard on agents mentioning agents. Plain Python: no database."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def mention_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"@{re.escape(name)}(?![\w-])", re.IGNORECASE)


def mentions(text: str, name: str) -> bool:
    return bool(name) and mention_pattern(name).search(text) is not None


# --- agents mentioning agents -----------------------------------------------------------
# An agent's post that names another agent reaches that agent's live sessions like a
# steer, marked as an agent's words. Two agents answering each other could go on forever:
# the guard below lets through at most `per_pair` posts from one agent to another within
# a window and at most `per_session` agents' mentions into one session, and what it
# stops is shown to people once per sender and session and window.


@dataclass(frozen=True, slots=True)
class MentionRules:
    per_pair: int = 3
    window_seconds: float = 600.0
    per_session: int = 10


@dataclass(frozen=True, slots=True)
class MentionVerdict:
    deliver: bool
    reason: str = ""  # why it was stopped, in words for people and the sender
    announce: bool = False  # post the stop to the room (not yet shown for this sender and session)


def judge_agent_mention(*, pair_times: Sequence[float], session_taken: int, stopped_recently: bool, now: float,
                        rules: MentionRules, sender: str, receiver: str) -> MentionVerdict:
    """Deliver one agent's mention of another to one session, or stop it.

    ``pair_times``: when the sender's earlier posts reached the receiver's agent (epoch
    seconds); ``session_taken``: agents' mentions the session already took (delivered or
    pending); ``stopped_recently``: a stop of this sender towards the session was already
    posted within the window."""
    if session_taken >= rules.per_session:
        reason = (f"{receiver}'s session already took {session_taken} messages from agents "
                  f"(at most {rules.per_session} per session)")
        return MentionVerdict(False, reason, announce=not stopped_recently)
    recent = sum(1 for at in pair_times if now - at < rules.window_seconds)
    if recent >= rules.per_pair:
        reason = (f"{sender} already reached {receiver} {recent} times in the last "
                  f"{rules.window_seconds / 60:g} min (at most {rules.per_pair})")
        return MentionVerdict(False, reason, announce=not stopped_recently)
    return MentionVerdict(True)


def mentioned(text: str, names: Iterable[str]) -> list[str]:
    """The names ``text`` mentions (``@name``), in the order given."""
    return [name for name in names if mentions(text, name)]


def render_agent_message(author: str, text: str) -> str:
    """How another agent's words read in the conversation: not a person's, not a decision."""
    return f"[agent {author} in the room: an agent's message, not a person's] {text}"


@dataclass(frozen=True, slots=True)
class MentionOutcome:
    agent: str
    session_id: int
    delivered: bool
    reason: str = ""


def post_note(*, outcomes: Sequence[MentionOutcome], idle_agents: Sequence[str], people: Sequence[str]) -> str:
    """What the posting agent is told about its mentions."""
    lines = []
    for o in outcomes:
        if o.delivered:
            lines.append(f"@{o.agent} (session {o.session_id}) reads it at its next step.")
        else:
            lines.append(f"@{o.agent} (session {o.session_id}) did NOT get it: {o.reason}. People were told; "
                         "do not repeat it, go on with your task.")
    lines += [f"@{name} has no running session in this room: only people see it." for name in idle_agents]
    lines += [f"@{name} is a person in this room: they see it in the chat." for name in people]
    return "\n".join(lines)
