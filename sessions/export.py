"""A session as a recorded trajectory (``*.atrium.json``), for the replay evaluator.

Outputs are the tools' full results: notes, receipts and handoffs are the gateway's
doing and the replay derives them again under each policy. Messages people and the
hub added between steps (steers, job results, nudges, verify output) become the
step's notice. A session that went through several segments is exported whole: the
ended segments come from their stored history, the current one from the state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.prompts import system_prompt
from agents.tools import registry
from observations.blobs import blob_texts
from observations.replay.trajectory import FileAccess, Step, ToolEvent, Trajectory, text_sha256
from rooms.repository.intent import intent_relpath
from sessions.ledger.state_store import session_gateway_state
from sessions.models import HistoryEntry, ProviderCall

# The gateway's own messages, which the replay makes again under each policy.
_SKIPPED = frozenset({"intent_update", "handoff"})


@dataclass
class _Turn:
    step: int
    text: str = ""
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # call id -> (tool, arguments)
    outputs: dict[str, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)  # call id -> (text, source)
    notices: list[str] = field(default_factory=list)


class _Turns:
    """Turns by step, filled from several sources; a step seen twice (the last step of a
    segment is carried into the next one) is one turn."""

    def __init__(self) -> None:
        self.by_step: dict[int, _Turn] = {}
        self.task: list[str] = []
        self._last: _Turn | None = None

    def turn(self, step: int) -> _Turn:
        turn = self.by_step.setdefault(step, _Turn(step))
        self._last = turn
        return turn

    def message(self, text: str) -> None:
        if self._last is None:
            self.task.append(text)
        elif text not in self._last.notices:
            self._last.notices.append(text)


def session_trajectory(session) -> Trajectory:
    turns = _Turns()
    for row in HistoryEntry.objects.filter(session=session).order_by("segment", "position"):
        if row.kind == "reply":
            turns.turn(row.step).text = row.text
        elif row.kind == "call":
            turns.turn(row.step).calls[row.call_id] = (row.tool, json.loads(row.text))
        elif row.kind == "result":
            turns.turn(row.step).outputs[row.call_id] = (row.text, None)
        elif row.kind != "task" or not turns.task:
            turns.message(row.text)
    _current_segment(session_gateway_state(session), turns)

    usage: dict[int, ProviderCall] = {}
    for call in ProviderCall.objects.filter(session=session, error="", purpose="step").order_by("id"):
        usage.setdefault(call.step, call)
    steps = []
    for step in sorted(turns.by_step):
        turn = turns.by_step[step]
        call = usage.get(step)  # the call that answered with this turn
        events = tuple(_event(cid, tool, args, *turn.outputs[cid]) for cid, (tool, args) in turn.calls.items()
                       if cid in turn.outputs)
        steps.append(Step(
            index=len(steps), assistant_text=turn.text, events=events,
            reported_input_tokens=call.input_tokens if call else None,
            reported_output_tokens=call.output_tokens if call else None,
            cached_input_tokens=call.cached_input_tokens if call else None,
            notice="\n\n".join(turn.notices) or None,
        ))

    agent, room = session.agent, session.task.room
    return Trajectory(
        source="atrium",
        trajectory_id=f"room-{room.pk}/session-{session.pk}",
        path="",
        model=agent.model,
        system_prompt=system_prompt(agent_name=agent.name, role_prompt=agent.role_prompt,
                                    check_command=room.check_command),
        task="\n\n".join(turns.task),
        steps=tuple(steps),
        meta={"repo_root": ".", "room": room.slug, "session": session.pk, "attempt": session.attempt,
              "state": session.state, "intent_path": intent_relpath(session.task_id),
              "policy": agent.eviction_policy, "context_window": agent.context_window},
    )


def _current_segment(state: dict[str, Any], turns: _Turns) -> None:
    observations = state.get("observations", [])
    texts = blob_texts({o["source"]["sha256"] for o in observations})
    by_call = {o["source"]["call_id"]: o for o in observations}
    for entry in state.get("entries", []):
        kind = entry["kind"]
        if kind in _SKIPPED:
            continue
        if kind == "intent":  # every segment opens with it; the task starts with it once
            if entry["text"] not in turns.task:
                turns.task.insert(0, entry["text"])
        elif kind == "assistant":
            turn = turns.turn(entry["step"])
            turn.text = entry["text"]
            for call_id, name, arguments in entry["tool_calls"]:
                turn.calls[call_id] = (name, arguments)
                if call_id in by_call:
                    source = by_call[call_id]["source"]
                    turn.outputs[call_id] = (texts[source["sha256"]], source)
        elif kind != "tool_result" and (kind != "task" or not turns.task):
            turns.message(entry["text"])


def _access_kind(tool: str) -> str | None:
    entry = registry.BY_NAME.get(tool)
    return entry.access if entry is not None else None


def _event(call_id: str, tool: str, arguments: dict, output: str, source: dict | None) -> ToolEvent:
    accesses: tuple[FileAccess, ...] = ()
    read = source["read"] if source is not None else None
    if read is not None:
        path, start, end, _ = read
        accesses = (FileAccess("read", path, start, end, text_sha256(output)),)
    elif (kind := _access_kind(tool)) == "read" and isinstance(arguments.get("path"), str):
        accesses = (FileAccess("read", arguments["path"], arguments.get("start"), arguments.get("end"),
                               text_sha256(output)),)
    elif kind is not None and isinstance(arguments.get("path"), str):
        accesses = (FileAccess(kind, arguments["path"]),)
    return ToolEvent(call_id=call_id, tool=tool, arguments=arguments, output=output, accesses=accesses)
