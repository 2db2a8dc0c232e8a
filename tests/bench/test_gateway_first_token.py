"""Benchmark: how soon a streamed answer's first token reaches the client through the
gateway endpoint, against a direct call to the same local upstream, in one run.

The upstream (the provider tests' wire-protocol server) streams every answer the same
way: its headers at once, the first text piece after FIRST_TOKEN_SECONDS (the model's
time to first token), then the rest of the text in PIECES pieces PIECE_SECONDS apart,
then a tool call. Each conversation is an agent loop of REQUESTS_PER_CONVERSATION steps
(the tool result, about 2 KB, appended each time, the whole history sent), run through
the official OpenAI SDK with ``stream=True``; one conversation at a time. Paths:

- direct: the client calls the upstream itself;
- session (the default): each conversation a proxied session, the upstream called
  streaming and its pieces forwarded as they come;
- session, translated: the same through the Anthropic SDK (Messages events built from
  the OpenAI upstream's chunks);
- pass-through (ATRIUM_GATEWAY_SESSIONS=False): the stream relayed as it comes.

Run: .venv/bin/pytest -m bench tests/bench/test_gateway_first_token.py -s -n0 (with
DATABASE_URL and REDIS_URL set for PostgreSQL and Redis). Prints, per path, the time to
the first token p50 / p99 in ms, what the gateway adds to it over direct (the issue's
bound: 50 ms), and the ratio to direct; the same for the whole answer.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator

import anthropic
import openai
import pytest

from tests.agents.providers.wire_server import Received, Reply, WireServer
from tests.bench.test_gateway_endpoint_latency import FILE, SYSTEM, TOOLS, _percentile, hubs  # noqa: F401
from tests.endpoint.conftest import owner, setup  # noqa: F401

FIRST_TOKEN_SECONDS = 0.15
PIECES, PIECE_SECONDS = 20, 0.01
REQUESTS_PER_CONVERSATION = 6
CONVERSATIONS = 4
ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in TOOLS]


class StreamingUpstream(WireServer):
    """Streams request k of any conversation (k: its assistant turns) as described above."""

    def _next(self, received: Received) -> Reply:
        turn = sum(1 for m in received.json["messages"] if m["role"] == "assistant")
        head = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": 1760000000,
                "model": "gpt-4.1"}

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            return f"data: {json.dumps({**head, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]})}\n\n".encode()

        parts = [(FIRST_TOKEN_SECONDS, chunk({"role": "assistant", "content": f"Step {turn}:"}))]
        parts += [(PIECE_SECONDS, chunk({"content": f" word{n}"})) for n in range(PIECES)]
        parts.append((0.0, chunk({"tool_calls": [{"index": 0, "id": f"call_{turn}", "type": "function", "function": {
            "name": "read_file", "arguments": json.dumps({"path": f"src/module_{turn}.py"})}}]})))
        parts.append((0.0, chunk({}, "tool_calls")))
        usage = {"prompt_tokens": 1000 + 600 * turn, "completion_tokens": 40, "total_tokens": 1040 + 600 * turn}
        parts.append((0.0, f"data: {json.dumps({**head, 'choices': [], 'usage': usage})}\n\n".encode()))
        parts.append((0.0, b"data: [DONE]\n\n"))
        with self._lock:
            self.requests.append(received)
        return Reply(200, b"", {"Content-Type": "text/event-stream"}, parts=tuple(parts))


@pytest.fixture
def wire() -> Iterator[StreamingUpstream]:
    server = StreamingUpstream()
    yield server
    server.close()


Step = Callable[[list[dict]], tuple[float, float]]  # the history: (first token, whole answer) in seconds


def _openai_step(base_url: str, key: str) -> Step:
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=120)

    def step(messages: list[dict]) -> tuple[float, float]:
        started, first = time.perf_counter(), None
        text, calls = "", {}
        for chunk in client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True):
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and delta.content:
                first = first or time.perf_counter()
                text += delta.content
            for call in (delta.tool_calls or ()) if delta is not None else ():
                held = calls.setdefault(call.index, {"id": call.id, "name": call.function.name, "arguments": ""})
                held["arguments"] += call.function.arguments or ""
        ended = time.perf_counter()
        messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": f"# {c['id']}\n{FILE}"}
                     for c in calls.values()]
        return (first or ended) - started, ended - started

    return step


def _anthropic_step(base_url: str, key: str) -> Step:
    client = anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0, timeout=120)

    def step(messages: list[dict]) -> tuple[float, float]:
        started, first = time.perf_counter(), None
        history = [m for m in messages if m["role"] != "system"]
        with client.messages.stream(model="m", max_tokens=2000, system=SYSTEM, tools=ANTHROPIC_TOOLS,
                                    messages=history) as stream:
            for event in stream:
                if event.type == "text":
                    first = first or time.perf_counter()
            final = stream.get_final_message()
        ended = time.perf_counter()
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": f"# {b.id}\n{FILE}"}
            for b in final.content if b.type == "tool_use"]})
        return (first or ended) - started, ended - started

    return step


def _run(step: Step, tag: str, *, system_message: bool = True) -> tuple[list[float], list[float]]:
    firsts, wholes = [], []
    for i in range(CONVERSATIONS):
        messages = [{"role": "system", "content": SYSTEM}] if system_message else []
        messages.append({"role": "user", "content": f"Task {tag}-{i}: find the bug in src/."})
        for _ in range(REQUESTS_PER_CONVERSATION):
            first, whole = step(messages)
            firsts.append(first * 1000)
            wholes.append(whole * 1000)
    return firsts, wholes


def _line(label: str, samples: list[float], direct: list[float]) -> str:
    p50, p99, d50, d99 = statistics.median(samples), _percentile(samples, 99), statistics.median(direct), \
        _percentile(direct, 99)
    return (f"{label:>20} | {p50:7.1f} / {p99:7.1f} | +{p50 - d50:6.1f} / +{p99 - d99:6.1f} | "
            f"×{p50 / d50:5.2f} / ×{p99 / d99:5.2f}")


@pytest.mark.bench
@pytest.mark.timeout(1200)
def test_a_streamed_answers_first_token_reaches_the_client_soon_after_the_upstreams(setup, wire, hubs):  # noqa: F811
    paths = {
        "direct": lambda: _openai_step(wire.url + "/v1", "sk-direct"),
        "session": lambda: _openai_step(hubs["session"].url + "/v1", setup.openai_key),
        "session, translated": lambda: _anthropic_step(hubs["session"].url, setup.openai_key),
        "pass-through": lambda: _openai_step(hubs["pass-through"].url + "/v1", setup.openai_key),
    }
    results = {}
    for name, make in paths.items():
        step = make()
        _run(step, f"warm-{name}")  # connections, imports, the SDKs' first parse
        results[name] = _run(step, name, system_message=name != "session, translated")
    print(f"\n{CONVERSATIONS} conversations × {REQUESTS_PER_CONVERSATION} streamed steps; the upstream's first "
          f"token after {FIRST_TOKEN_SECONDS * 1000:.0f} ms, the answer over {PIECES} more pieces")
    for index, what in ((0, "first token"), (1, "whole answer")):
        print(f"{what}: ms p50 / p99 | added to direct p50 / p99 | ratio to direct p50 / p99")
        for name, samples in results.items():
            print(_line(name, samples[index], results["direct"][index]))
