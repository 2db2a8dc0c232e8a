"""Benchmark: what hashing a long history costs per request, the part of a step that
grows with the session (the gateway compares every message of each request with what
its session holds; every call's record hashes its stable prefix).

Run: .venv/bin/pytest -m bench tests/bench/test_history_digests.py -s -n0. Prints, for a
history of 300 tool calls (each a 2.4 KB file read), the best of 40 rounds of each
hash as it is (``message_digest``: the text hashed as it is, after a head written with
json's own encoders) and as it was (the sha256 of each message's canonical JSON,
``serialize_message``), and their ratio: on messages made anew, as a client's history
is with each request, and on the same messages again, as a session's own request holds
them step after step (a message keeps its digest once made). On the 2-core development
box, three runs: digests 6.1-6.3 → 2.9-3.6 ms (0.47-0.56), prefix hash 5.7-9.3 →
2.7-4.6 ms (0.47-0.71), the prefix hash of messages kept 7.2-8.0 → 0.06-0.11 ms (0.01;
this machine's timings wander). A history's answers (which of its messages are the
gateway's answers, looked for where the client names no conversation) once its
digests are made: 2.1-3.8 → 0.21-0.22 ms (0.06-0.10), an answer whose text has no
spaces to trim being the message's own digest.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from agents.providers import prefix_hash
from endpoint.conversation import answer_digests, message_digests
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


def _answers_as_they_were(request: Request) -> list[str]:
    return [message_digests([Message("assistant", m.text.strip(), tool_calls=m.tool_calls)])[0]
            if m.role == "assistant" else "" for m in request.messages]


def _best_ms(hashing, *, kept: bool, digested: bool = False) -> float:
    """The best of 40 rounds, each on messages made anew (a client's history, parsed
    again with each request) or, ``kept``, on the same messages again (a session's
    own, which its request holds step after step); ``digested``: their digests made
    first, untimed, as a request's are before its answers are looked for."""
    same = _history()
    times = []
    for _ in range(40):
        request = same if kept else _history()
        if digested:
            message_digests(request.messages)
        started = time.perf_counter()
        hashing(request)
        times.append(time.perf_counter() - started)
    return min(times) * 1000


@pytest.mark.bench
def test_hashing_a_300_step_history():
    print(f"\n{STEPS} steps, {2 * STEPS + 1} messages: ms as it was / as it is (ratio)")
    for label, before, now, kept, digested in (
            ("digests", _digests_as_they_were, lambda r: message_digests(r.messages), False, False),
            ("prefix hash", _prefix_hash_as_it_was, prefix_hash, False, False),
            ("prefix hash, the messages kept", _prefix_hash_as_it_was, prefix_hash, True, False),
            ("answers, after the digests", _answers_as_they_were, lambda r: answer_digests(r.messages), False, True)):
        was, is_ = _best_ms(before, kept=kept, digested=digested), _best_ms(now, kept=kept, digested=digested)
        print(f"{label:>30} | {was:5.2f} / {is_:5.2f} ({is_ / was:.2f})")
