"""A recorded trajectory played through the gateway endpoint as its agent would have
played it, for the parity check between the endpoint and ``manage.py replay``
(test_replay_parity.py, and its longer variant under ``-m bench``).

The client is the official OpenAI SDK keeping its whole history: system prompt, task,
then per step the assistant turn it got back and the recorded tool results. The
upstream is the wire-protocol server answering each request with the trajectory's
recorded next turn, and reporting as ``prompt_tokens`` the gateway estimator's size of
what it received: the simulated provider of the evaluator reports the same figure, so
both gateways are anchored the same way and neither learns a calibration ratio.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field

import openai

from endpoint import feed
from endpoint.formats import FORMATS
from observations.gateway.messages import Request, ToolCall
from observations.gateway.receipts import render_receipt
from observations.gateway.tokens import estimate_request_message, estimate_tokens
from observations.gateway.transcript import Observation, ObservationInput
from observations.replay.eval import engine
from observations.replay.trajectory import Step, ToolEvent, Trajectory
from tests.agents.providers.wire_server import Received, Reply, WireServer

PATH = "/v1/chat/completions"
# The replay's own, kept: a benchmark puts named_as_the_endpoint_names_it in its place.
replay_observation = engine.observation_input
UPSTREAM_MODEL = "gpt-4.1"


def request_tokens(request: Request) -> int:
    """The gateway's estimate of a request (its ``SessionContext`` sums the same parts:
    system prompt and tool table, then each message with its calls' names and arguments)."""
    header = estimate_tokens(request.system) + sum(
        estimate_tokens(t.name + t.description + str(t.parameters)) for t in request.tools)
    return header + sum(estimate_request_message(m) for m in request.messages)


def recorded_turn(step: Step) -> dict:
    message: dict = {"role": "assistant", "content": step.assistant_text or None}
    if step.events:
        message["tool_calls"] = [{"id": e.call_id, "type": "function",
                                  "function": {"name": e.tool, "arguments": json.dumps(e.arguments)}}
                                 for e in step.events]
    return message


def naming_excess(request: Request, trajectory: Trajectory) -> int:
    """Tokens the endpoint's receipts and notes in ``request`` spend beyond the replay's
    for the same results: both name a result by its call (``receipts.call_purpose``), but
    a read's path is the client's own (absolute) at the endpoint, repository-relative in
    the replay, and a shell line's read is recognised by the replay only."""
    events = {e.call_id: e for step in trajectory.steps for e in step.events}
    calls = {c.id: c for m in request.messages for c in m.tool_calls}
    excess = 0
    for message in request.messages:
        event = events.get(message.tool_call_id or "")
        if message.role != "tool" or event is None:
            continue
        ours = feed.observation_input(calls[event.call_id], event.output)
        theirs = replay_observation(event)
        if message.text == render_receipt(Observation(0, 0, ours)):
            excess += estimate_tokens(message.text) - estimate_tokens(render_receipt(Observation(0, 0, theirs)))
        elif message.text.startswith(("[unchanged]", "[receipt")) and ours.read and theirs.read:
            # A note for an unchanged re-read, or one whose text was folded out.
            renamed = message.text.replace(ours.read.describe(), theirs.read.describe(), 1)
            excess += estimate_tokens(message.text) - estimate_tokens(renamed)
    return excess


def named_as_the_endpoint_names_it(event: ToolEvent) -> ObservationInput:
    """The replay's observation of ``event`` with what the endpoint knows of it instead
    of what the replay's readers recognised: its purpose (the call), its read's path
    (the client's), no read it cannot see (a shell command's), no write the editor
    refused. With it in place of ``engine.observation_input`` the replay's requests name
    every result as the endpoint's do: what is left between the two is their decisions."""
    ours = feed.observation_input(ToolCall(event.call_id, event.tool, event.arguments), event.output)
    theirs = replay_observation(event)
    read = dataclasses.replace(theirs.read, path=ours.read.path) if theirs.read and ours.read else None
    return dataclasses.replace(theirs, purpose=theirs.purpose if read else ours.purpose, read=read,
                               file_fingerprint=theirs.file_fingerprint if read else "", written=ours.written)


class TrajectoryUpstream(WireServer):
    """Answers every request with the recorded turn of the step the client is at
    (``step``: a segment's prose request too, should the gateway start one), and keeps
    each request's estimated size."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self.step = 0
        self.sizes: list[int] = []
        self.excess: list[int] = []  # naming_excess of each request
        self.received: list[Request] = []
        super().__init__()

    def _next(self, received: Received) -> Reply:
        request = FORMATS["openai"].request(received.json, UPSTREAM_MODEL)
        size = request_tokens(request)
        step = self.trajectory.steps[self.step]
        body = {"id": f"chatcmpl-{step.index}", "object": "chat.completion", "created": 1760000000,
                "model": UPSTREAM_MODEL,
                "choices": [{"index": 0, "message": recorded_turn(step),
                             "finish_reason": "tool_calls" if step.events else "stop"}],
                "usage": {"prompt_tokens": size, "completion_tokens": 10, "total_tokens": size + 10}}
        with self._lock:
            self.requests.append(received)
            self.received.append(request)
            self.sizes.append(size)
            self.excess.append(naming_excess(request, self.trajectory))
        return Reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})


@dataclass
class Played:
    latencies: list[float] = field(default_factory=list)  # seconds per request, client side


def play(trajectory: Trajectory, client: openai.OpenAI, upstream: TrajectoryUpstream) -> Played:
    """Send the trajectory's requests through ``client``, each with the whole history as
    the agent kept it, ``upstream`` answering. Only steps the agent kept
    in its history can be played this way: a dropped one would read as an edited history."""
    played = Played()
    # The recorded tool schemas, as the agent sent them (OpenAI's shape, or bare).
    tools = [t if "function" in t else {"type": "function", "function": t} for t in trajectory.meta.get("tools") or ()]
    extra = {"tools": tools} if tools else {}
    messages: list[dict] = [{"role": "system", "content": trajectory.system_prompt},
                            {"role": "user", "content": trajectory.task}]
    for step in trajectory.steps:
        if not step.kept_in_history:
            raise ValueError(f"step {step.index} was dropped from the agent's history; pick another trajectory")
        upstream.step = step.index
        started = time.perf_counter()
        answer = client.chat.completions.create(model="any", messages=messages, **extra)
        played.latencies.append(time.perf_counter() - started)
        reply = answer.choices[0].message
        assert (reply.content or "") == step.assistant_text, f"step {step.index}: the turn came back changed"
        assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in reply.tool_calls or ()] == [
            (e.call_id, e.tool, e.arguments) for e in step.events], f"step {step.index}: the calls came back changed"
        messages.append(reply.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"}))
        messages.extend({"role": "tool", "tool_call_id": e.call_id, "content": e.output} for e in step.events)
        if step.notice:
            messages.append({"role": "user", "content": step.notice})
    return played
