"""Benchmark: what the gateway endpoint adds to a model call, per request, against a
direct call to the same local upstream (the provider tests' wire-protocol server), at
1, 10 and 100 concurrent conversations, each a few requests in a row, through the
official OpenAI SDK (async) and a real Daphne (one process).

Run: .venv/bin/pytest -m bench tests/bench/test_gateway_endpoint_latency.py -s
Prints p50 and p99 of each path and their difference. On the 2-core development box
(client, upstream and Daphne on the same machine), added p50 / p99 in ms:
1 conversation 17 / 32, 10: 108 / 193, 100: 1149 / 1801. One request costs the hub
about 15 ms (Django's middleware, a fresh database connection for the key lookup, the
SDK); beyond that the added time is queueing in the one Daphne process: more web
processes, not a faster request, is what scales it.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import openai
import pytest

from tests.agents.endpoint.conftest import hub, owner, setup, wire  # noqa: F401
from tests.agents.providers.wire_server import load_fixture

REQUESTS_PER_CONVERSATION = 5
CONCURRENCY = (1, 10, 100)


def _percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _conversations(base_url: str, key: str, n: int) -> list[float]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=60)
    latencies: list[float] = []

    async def conversation(i: int) -> None:
        messages = [{"role": "user", "content": f"conversation {i}"}]
        for _ in range(REQUESTS_PER_CONVERSATION):
            started = time.perf_counter()
            await client.chat.completions.create(model="m", messages=messages)
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(conversation(i) for i in range(n)))
    await client.close()
    return latencies


@pytest.mark.bench
@pytest.mark.timeout(600)
def test_the_endpoint_adds_little_to_each_request(setup, wire, hub):  # noqa: F811
    reply = load_fixture("openai_chat_tool_calls.json")
    print(f"\nconcurrent | direct p50 / p99 ms | via hub p50 / p99 ms | added p50 / p99 ms "
          f"({REQUESTS_PER_CONVERSATION} requests per conversation)")
    for n in CONCURRENCY:
        results = {}
        for path, base_url, key in (("direct", wire.url + "/v1", "sk-direct"),
                                    ("hub", hub.url + "/v1", setup.openai_key)):
            for _ in range((n + 1) * REQUESTS_PER_CONVERSATION):
                wire.reply("/v1/chat/completions", json_body=reply)
            asyncio.run(_conversations(base_url, key, 1))  # warm: connections, imports
            results[path] = [s * 1000 for s in asyncio.run(_conversations(base_url, key, n))]
        direct, via = results["direct"], results["hub"]
        p50d, p99d = statistics.median(direct), _percentile(direct, 99)
        p50h, p99h = statistics.median(via), _percentile(via, 99)
        print(f"{n:10d} | {p50d:8.1f} / {p99d:7.1f} | {p50h:8.1f} / {p99h:7.1f} | {p50h - p50d:8.1f} / {p99h - p99d:7.1f}")
        assert len(via) == n * REQUESTS_PER_CONVERSATION
