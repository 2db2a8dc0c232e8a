"""Benchmark: what the gateway endpoint adds to a model call, per request, against a
direct call to the same local upstream (the provider tests' wire-protocol server), at
1, 10 and 100 concurrent conversations, through the official OpenAI SDK (async) and a
real Daphne (one process), PostgreSQL behind it.

Each conversation is an agent loop: a system prompt, a task, then REQUESTS_PER_CONVERSATION
requests, each answered with a tool call whose result (a file of about 2 KB) the client
appends before the next request, the whole history sent every time. Three paths, each
measured in the same run against the same upstream:

- direct: the client calls the upstream itself;
- session (ATRIUM_GATEWAY_SESSIONS on, the default): each conversation is a proxied
  session of the room: the request is taken into the session (tool results become
  observations), the gateway prepares the request it sends upstream, and the unit's
  records (state, calls, events) are saved, under the conversation's row lock;
- pass-through (ATRIUM_GATEWAY_SESSIONS=False): the request is relayed as it is.

Run: .venv/bin/pytest -m bench tests/bench/test_gateway_endpoint_latency.py -s
(with DATABASE_URL and REDIS_URL set for PostgreSQL and Redis). Prints p50 / p99 in ms of each
path, each hub path's ratio to the direct call (p50 ratio / p99 ratio) and the time it
adds; at least SAMPLES requests per path and concurrency. On the 2-core development box
(client, upstream, PostgreSQL and Daphne on the same machine):

| concurrent | direct p50 / p99 | session p50 / p99 (× direct) | pass-through p50 / p99 (× direct) |
|--:|--:|--:|--:|
| 1 | 3.9 / 6.6 | 33.5 / 49.1 (×8.7 / ×7.5) | 16.2 / 21.6 (×4.2 / ×3.3) |
| 20 | 53.6 / 77.8 | 670 / 922 (×12.5 / ×11.8) | 265 / 387 (×5.0 / ×5.0) |
| 100 | 350 / 519 | 3,478 / 5,424 (×9.9 / ×10.4) | 1,395 / 1,706 (×4.0 / ×3.3) |

At one conversation the session adds 30 ms p50 / 43 ms p99 (70-109 ms p50 before the
gateway's own work per request was cut, tests/bench/test_gateway_step_cost.py), the
pass-through 12 / 15 ms (18 / 19 before the key's look-up became one query). Beyond one
conversation the added time is queueing in the one Daphne process: each request costs
it about 30 ms of CPU in session mode (the request's unit, the key's look-up, Django's
handling, the SDK's call), and the process serves one at a time on the GIL, so 20
conversations at once wait for each other. More web processes, not a faster request,
is what scales that. Against a real provider (hundreds of ms to seconds per call, 10-100
times this local upstream's) the ratios are that much smaller.

Since the relay sends the client's body past the SDK's rewriting and the key's look-up,
the session and the conversation's lock are statements written out, at 1 and 20
clients, one run of f663779 and one of this code right after it, on a box about 2.5
times as slow as the table's (direct 9.7 ms p50 at one client):

| concurrent | path | f663779 p50 / p99 (× direct) | now p50 / p99 (× direct) |
|--:|--|--:|--:|
| 1 | session | 80.7 / 114.4 (×8.3 / ×8.5) | 60.6 / 94.5 (×6.3 / ×5.6) |
| 1 | pass-through | 44.5 / 69.0 (×4.6 / ×5.1) | 26.2 / 35.6 (×2.7 / ×2.1) |
| 20 | session | 1,512 / 2,748 (×6.4 / ×4.0) | 1,176 / 1,761 (×7.3 / ×7.4) |
| 20 | pass-through | 637 / 1,075 (×2.7 / ×1.6) | 329 / 458 (×2.0 / ×1.9) |

(the direct calls at 20 clients took 238 / 689 ms in the first run and 160 / 238 ms in
the second: the ratios at 20 move with them).

Since the gateway's paths take their own handler (hub/gateway_handler.py), the hubs
here run with DEBUG off and a hub process freezes its startup objects
(hub/gc_freeze.py): four runs alternating with four of 0882c30 (hubs with DEBUG off
too), added over direct p50 at one client: the pass-through 7.1-9.9 ms (11.0-14.8
before), the session 20.7-32.0 ms (23.8-36.0); at 20 clients the session's p99 ×5.2-6.6
direct (×6.0-11.1 before).

Since a request is routed by the latest of the gateway's answers alone, the unit's rows
are INSERTs written out and the gateway's handler keeps each request's thread for the
next (docs/operations.md), alternating with 063669f on a box about twice as fast: added
over direct p50 at one client, the session 12.2-13.1 ms (14.5-16.1 before; three runs
each, CONCURRENCY = (1,), SAMPLES = 300), p99 24.3-28.5 ms; at 20 clients the session's
p99 ×6.0-7.6 direct (×6.6-7.3), the pass-through's ×1.2-1.4 (×1.6-2.0).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Iterator

import openai
import pytest

from tests.agents.providers.wire_server import Received, Reply, WireServer
from tests.conftest import DaphneServer, start_daphne
from tests.endpoint.conftest import owner, setup  # noqa: F401

REQUESTS_PER_CONVERSATION = 6
CONCURRENCY = (1, 20, 100)
SAMPLES = 60  # requests at least, per path and concurrency: conversations one after the other
SYSTEM = "You are a coding agent. Use the tools to read files, then answer."
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
FILE = "".join(f"def function_{n}(value):\n    return value * {n} + {n * 7} - len(str(value))\n\n"
               for n in range(30))  # about 2 KB


class ToolLoopUpstream(WireServer):
    """Answers request k of any conversation (k: the assistant turns it holds) with a
    read of file k, the last one with text: every request gets its reply whatever
    order the conversations' requests arrive in."""

    def _next(self, received: Received) -> Reply:
        body = received.json
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message: dict = {"role": "assistant", "content": f"Step {turn}: reading the next file."}
        if turn < REQUESTS_PER_CONVERSATION - 1:
            message["tool_calls"] = [{"id": f"call_{turn}", "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"path": f"src/module_{turn}.py"})}}]
        answer = {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 1760000000,
                  "model": "gpt-4.1", "choices": [{"index": 0, "message": message, "finish_reason":
                                                   "tool_calls" if "tool_calls" in message else "stop"}],
                  "usage": {"prompt_tokens": 1000 + 600 * turn, "completion_tokens": 20,
                            "total_tokens": 1020 + 600 * turn}}
        with self._lock:
            self.requests.append(received)
        return Reply(200, json.dumps(answer).encode(), {"Content-Type": "application/json"})


@pytest.fixture
def wire() -> Iterator[ToolLoopUpstream]:
    server = ToolLoopUpstream()
    yield server
    server.close()


@pytest.fixture
def hubs(transactional_db, tmp_path) -> Iterator[dict[str, DaphneServer]]:
    """The hub twice: proxied sessions (the default) and pass-through; one key may have
    every conversation in flight; DEBUG off, as a hub runs (on, Django keeps every
    statement's text and time)."""
    options = {"ATRIUM_GATEWAY_KEY_CONCURRENCY": str(max(CONCURRENCY)), "DEBUG": "false"}
    session = start_daphne(tmp_path / "daphne-session.log", **options)
    try:
        relay = start_daphne(tmp_path / "daphne-relay.log", ATRIUM_GATEWAY_SESSIONS="False", **options)
        try:
            yield {"session": session, "pass-through": relay}
        finally:
            relay.hub_process.stop()
    finally:
        session.hub_process.stop()


def _percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _conversations(base_url: str, key: str, n: int, tag: str) -> list[float]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=300)
    latencies: list[float] = []

    async def conversation(i: int) -> None:
        # A task of its own: the hub names a conversation by the start of its history.
        messages: list[dict] = [{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": f"Task {tag}-{i}: find the bug in src/."}]
        for _ in range(REQUESTS_PER_CONVERSATION):
            started = time.perf_counter()
            answer = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            latencies.append(time.perf_counter() - started)
            reply = answer.choices[0].message
            messages.append(reply.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"}))
            for call in reply.tool_calls or ():
                messages.append({"role": "tool", "tool_call_id": call.id, "content": f"# {call.id}\n{FILE}"})

    await asyncio.gather(*(conversation(i) for i in range(n)))
    await client.close()
    return latencies


def _line(label: str, samples: list[float], direct: list[float] | None = None) -> str:
    p50, p99 = statistics.median(samples), _percentile(samples, 99)
    text = f"{label:>13} | {p50:8.1f} / {p99:8.1f}"
    if direct is not None:
        d50, d99 = statistics.median(direct), _percentile(direct, 99)
        text += f" | ×{p50 / d50:6.1f} / ×{p99 / d99:6.1f} | {p50 - d50:8.1f} / {p99 - d99:8.1f}"
    return text


@pytest.mark.bench
@pytest.mark.timeout(1200)
def test_the_endpoint_adds_little_to_each_request(setup, wire, hubs):  # noqa: F811
    paths = {"direct": (wire.url + "/v1", "sk-direct"),
             **{name: (hub.url + "/v1", setup.openai_key) for name, hub in hubs.items()}}
    print(f"\n{REQUESTS_PER_CONVERSATION} requests per conversation, each after a tool result of "
          f"{len(FILE):,} bytes; ms p50 / p99, ratio to direct p50 / p99, added p50 / p99")
    for n in CONCURRENCY:
        results = {}
        for path, (base_url, key) in paths.items():
            asyncio.run(_conversations(base_url, key, 1, f"warm-{path}-{n}"))  # connections, imports
            rounds = -(-SAMPLES // (n * REQUESTS_PER_CONVERSATION))
            results[path] = [s * 1000 for r in range(rounds)
                             for s in asyncio.run(_conversations(base_url, key, n, f"{path}-{n}-{r}"))]
            assert len(results[path]) == rounds * n * REQUESTS_PER_CONVERSATION
        print(f"{n} concurrent conversations")
        print(_line("direct", results["direct"]))
        for path in hubs:
            print(_line(path, results[path], results["direct"]))
