"""A session as a recorded trajectory (``*.atrium.json``), for the replay evaluator.

Outputs are the tools' full results: notes and receipts are the gateway's doing and the
replay derives them again under each policy. Messages people and the hub added between
steps (steers, job results, nudges, verify output) become the step's notice.
"""

from __future__ import annotations

from observations.blobs import blob_texts
from observations.intent import intent_relpath
from observations.replay.trajectory import FileAccess, Step, ToolEvent, Trajectory, text_sha256

_ACCESS_KIND = {"write_file": "write", "edit_file": "edit", "undo_edit": "edit", "list_files": "list",
                "search": "search"}


def session_trajectory(session) -> Trajectory:
    from agents.models import ProviderCall
    from agents.runtime.prompts import system_prompt

    state = session.gateway_state or {}
    entries, observations = state.get("entries", []), state.get("observations", [])
    texts = blob_texts({o["source"]["sha256"] for o in observations})
    by_call = {o["source"]["call_id"]: o for o in observations}
    usage = {}
    for call in ProviderCall.objects.filter(session=session, error="").order_by("id"):
        usage.setdefault(call.step, call)

    task_parts: list[str] = []
    steps: list[Step] = []
    for entry in entries:
        if entry["kind"] == "assistant":
            call = usage.get(entry["step"])
            events = tuple(_event(by_call[cid], name, args, texts) for cid, name, args in entry["tool_calls"]
                           if cid in by_call)
            steps.append(Step(
                index=len(steps), assistant_text=entry["text"], events=events,
                reported_input_tokens=call.input_tokens if call else None,
                reported_output_tokens=call.output_tokens if call else None,
                cached_input_tokens=call.cached_input_tokens if call else None,
            ))
        elif entry["kind"] != "tool_result":
            if steps:
                last = steps[-1]
                notice = f"{last.notice}\n\n{entry['text']}" if last.notice else entry["text"]
                steps[-1] = Step(last.index, last.assistant_text, last.events, last.reported_input_tokens,
                                 last.reported_output_tokens, last.cached_input_tokens, notice)
            else:
                task_parts.append(entry["text"])

    agent, room = session.agent, session.task.room
    return Trajectory(
        source="atrium",
        trajectory_id=f"room-{room.pk}/session-{session.pk}",
        path="",
        model=agent.model,
        system_prompt=system_prompt(agent_name=agent.name, role_prompt=agent.role_prompt,
                                    check_command=room.check_command),
        task="\n\n".join(task_parts),
        steps=tuple(steps),
        meta={"repo_root": ".", "room": room.slug, "session": session.pk, "attempt": session.attempt,
              "state": session.state, "intent_path": intent_relpath(session.task_id),
              "policy": agent.eviction_policy, "context_window": agent.context_window},
    )


def _event(observation: dict, tool: str, arguments: dict, texts: dict[str, str]) -> ToolEvent:
    source = observation["source"]
    output = texts[source["sha256"]]
    accesses: tuple[FileAccess, ...] = ()
    if source["read"] is not None:
        path, start, end, _ = source["read"]
        accesses = (FileAccess("read", path, start, end, text_sha256(output)),)
    elif tool in _ACCESS_KIND and isinstance(source["arguments"].get("path"), str):
        accesses = (FileAccess(_ACCESS_KIND[tool], source["arguments"]["path"]),)
    return ToolEvent(call_id=source["call_id"], tool=tool, arguments=arguments, output=output, accesses=accesses)
