"""What the runtime persists about every model call, successful or not."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from observations.gateway.messages import ModelTurn, Request, message_digest, serialize_request
from observations.gateway.turn import Usage


def prefix_hash(request: Request) -> str:
    """The hash of system, tools and messages up to ``stable_prefix_end`` (inclusive; a
    negative index: no message yet): equal hashes across calls mean the provider could
    serve the prefix from its cache."""
    head = serialize_request(Request(model=request.model, system=request.system, tools=request.tools, messages=(),
                                     max_tokens=request.max_tokens))
    prefix = hashlib.sha256(head.encode("utf-8", "surrogatepass"))
    for message in request.messages[: max(request.stable_prefix_end + 1, 0)]:
        prefix.update(message_digest(message))
    return prefix.hexdigest()


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One logical model call: every retry and fallback it took, and how it ended."""

    model: str  # spec of the endpoint that answered (or was tried last)
    requested_model: str  # spec of the primary endpoint
    prefix_hash: str
    input_tokens: int = 0  # provider-counted input, cached included
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    usage_reported: bool = False  # False: the provider sent no usage; counts are 0, not measured
    latency_ms: int = 0  # the answering request alone
    elapsed_ms: int = 0  # the whole call: attempts, backoff sleeps, fallbacks
    attempts: int = 0  # HTTP requests made across all endpoints
    fallback_used: bool = False
    stop_reason: str = ""
    error: str | None = None  # redacted message of the final error
    error_kind: str | None = None  # ProviderError.kind of the final error
    purpose: str = "step"  # "handoff": the prose call of a new segment
    # Set by the step loop, not the provider: the gateway's projection of this request's
    # input tokens (to compare with what the provider counted) and what the request is
    # made of (observations.gateway.breakdown).
    projected_tokens: int = 0
    prefix: dict[str, Any] = field(default_factory=dict)
    # Set by the host for agents that record their requests (evals read them back):
    # serialize_request of what was sent.
    request: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def usage(self) -> Usage | None:
        """What the provider counted, for the gateway's anchor; nothing is learned from a
        fallback model's count (another tokenizer)."""
        if not self.usage_reported:
            return None
        return Usage(self.input_tokens, learn=self.model == self.requested_model)


@dataclass(frozen=True, slots=True)
class Completion:
    turn: ModelTurn
    record: CallRecord
