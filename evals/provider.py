"""`script:<name>`: the agent's side of an eval scenario, played turn by turn.

``manage.py eval`` stores each scenario it runs in the hub's eval folder
(``EVAL_SCRIPTS_DIR``) as ``<name>-<version>.json``; the spec names that file, never a
path. The scenario's turns become recorded turns: each turn's agent steps, the last of them
with an ``await`` that parks the session until the next person's message (the last
turn ends with the agent's answer instead). Like ``replay:``, a request is answered by its step,
so the provider is stateless and a resumed or reset session continues at the right
turn; handoff prose comes from the scenario. Once the script is played out, the last
answer is given again (a nudge may ask once more).
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.providers.errors import InvalidModelSpec
from agents.providers.replay import RecordedTurn, ReplayProvider, resolve_replay_path
from evals.scenario import Scenario, ScenarioError
from evals.scenario_files import scenario_from
from observations.gateway.messages import ModelTurn, Request

# How long the scripted agent waits for a person: a steer returns it at once.
AWAIT_SECONDS = 3_600


def script_turns(scenario: Scenario) -> tuple[RecordedTurn, ...]:
    """Each turn's agent steps; the last one also awaits the next message (the last
    turn ends with the answer instead), so a turn costs no extra model call."""
    turns: list[RecordedTurn] = []
    for turn in scenario.turns:
        last_turn = turn.number == len(scenario.turns)
        steps = list(turn.agent) or [None]
        for j, step in enumerate(steps):
            calls = tuple((f"t{turn.number}-s{j}-c{k}", call.tool, dict(call.arguments))
                          for k, call in enumerate(step.calls)) if step else ()
            text = step.say if step else ""
            if j == len(steps) - 1 and not last_turn:
                calls += ((f"t{turn.number}-await", "await", {"seconds": AWAIT_SECONDS}),)
                text = "\n\n".join(part for part in (text, turn.answer) if part)
            turns.append(RecordedTurn(text=text, tool_calls=calls, usage=None, stop_reason=None))
        if last_turn:
            turns.append(RecordedTurn(text=turn.answer, tool_calls=(), usage=None, stop_reason="end_turn"))
    return tuple(turns)


def turn_end_steps(scenario: Scenario) -> list[int]:
    """The session's step count when each turn has ended (its await sent)."""
    ends, steps = [], 0
    for turn in scenario.turns:
        steps += max(1, len(turn.agent))
        ends.append(steps)
    ends[-1] += 1  # the last turn's answer
    return ends


class ScriptProvider(ReplayProvider):
    def __init__(self, path: Path, scenario: Scenario, name: str) -> None:
        super().__init__(path, model=f"script-{scenario.name}", turns=script_turns(scenario), name=name,
                         handoffs=scenario.handoff_prose)
        self.spec = f"script:{name}"
        self.scenario = scenario

    @classmethod
    def from_script(cls, name: str, *, script_dir: Path | str | None) -> ScriptProvider:
        if script_dir is None:
            raise InvalidModelSpec(f"script:{name} needs the hub's eval folder")
        try:
            path = resolve_replay_path(name, replay_dir=script_dir)
        except InvalidModelSpec:
            raise InvalidModelSpec(f"script:{name} must name a scenario stored by manage.py eval") from None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            scenario = scenario_from(raw, source=name)
        except FileNotFoundError:
            raise InvalidModelSpec(f"script:{name}: no such scenario in the hub's eval folder") from None
        except (OSError, ValueError, ScenarioError) as exc:
            raise InvalidModelSpec(f"script:{name}: {exc}") from None
        return cls(path, scenario, name)

    def complete(self, request: Request) -> ModelTurn:
        played = max(request.step, sum(1 for m in request.messages if m.role == "assistant"))
        if request.purpose != "handoff" and played >= len(self.turns):
            last = self.turns[-1].text
            return ModelTurn(text=last, usage=self._estimate(request, last, (), played), model=self.model,
                             stop_reason="end_turn")
        return super().complete(request)
