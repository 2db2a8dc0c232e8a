"""Benchmark: what hashing a long history costs per request, the part of a step that
grows with the session (the gateway compares every message of each request with what
its session holds; every call's record hashes its stable prefix).

Run: .venv/bin/pytest -m bench tests/bench/test_history_digests.py -s -n0. Prints, for a
history of 300 tool calls (each a 2.4 KB file read), the best of 40 rounds of each
hash as it is (``message_digest``: the text hashed as it is) and as it was (the sha256
of each message's canonical JSON, ``serialize_message``), and their ratio. On the
2-core development box, three runs: digests 5.7-5.9 → 3.5-3.7 ms (0.61-0.64), prefix
hash 6.2-6.7 → 3.4-6.0 ms (0.53, 0.56 and once 0.89: this machine's timings wander).
"""

from __future__ import annotations

import hashlib
import timeit

import pytest

from agents.providers import prefix_hash
from endpoint.conversation import message_digests
from observations.gateway.messages import (
    Message,
    Request,
    ToolCall,
    serialize_message,
    serialize_request,
)
from tests.bench.test_gateway_endpoint_latency import FILE

STEPS = 300


def _history() -> Request:
    messages = [Message("user", "Fix geo.py")]
    for n in range(STEPS):
        messages += [Message("assistant", f"Step {n}.", tool_calls=(ToolCall(f"call_{n}", "read_file",
                                                                             {"path": f"src/m{n}.py"}),)),
                     Message("tool", f"{FILE}# {n}\n", tool_call_id=f"call_{n}", tool_name="read_file")]
    return Request(model="m", system="You fix bugs.", tools=(), messages=tuple(messages), max_tokens=1000,
                   stable_prefix_end=len(messages) - 1)


def _digests_as_they_were(request: Request) -> list[str]:
    return [hashlib.sha256(serialize_message(m).encode()).hexdigest()[:32] for m in request.messages]


def _prefix_hash_as_it_was(request: Request) -> str:
    head = serialize_request(Request(model=request.model, system=request.system, tools=request.tools, messages=(),
                                     max_tokens=request.max_tokens))
    return hashlib.sha256((head + "".join(serialize_message(m) for m in request.messages)).encode()).hexdigest()


def _best_ms(hashing, request: Request) -> float:
    return min(timeit.repeat(lambda: hashing(request), number=5, repeat=40)) / 5 * 1000


@pytest.mark.bench
def test_hashing_a_300_step_history():
    request = _history()
    print(f"\n{STEPS} steps, {len(request.messages)} messages: ms as it was / as it is (ratio)")
    for label, before, now in (("digests", _digests_as_they_were, lambda r: message_digests(r.messages)),
                               ("prefix hash", _prefix_hash_as_it_was, prefix_hash)):
        was, is_ = _best_ms(before, request), _best_ms(now, request)
        print(f"{label:>11} | {was:5.2f} / {is_:5.2f} ({is_ / was:.2f})")
