"""Provider-neutral request and response shapes.

Providers translate these to and from the OpenAI and Anthropic wire formats. A
request's messages are built by the gateway; `serialize_message` is their canonical
byte form, `message_digest` the hash of the same content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]
ToolChoiceMode = Literal["auto", "none", "required", "tool"]


# ToolCall.arguments must be a dict, but models sometimes write invalid JSON or a
# non-object. The raw text is kept under this key so the tool dispatcher can answer
# the model with a clear error instead of running the tool with guessed arguments.
MALFORMED_ARGUMENTS_KEY = "__malformed_arguments__"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # agents.providers.toolcalls.call_arguments_text's, kept once written (as a message's
    # digest is): a long session's request renders every earlier call again.
    _arguments_text: str | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message.

    ``role == "tool"`` carries the result of ``tool_call_id``; tool messages follow
    the assistant message that issued the calls, in call order.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    # An assistant message's thinking blocks, each the JSON of the block as its provider
    # gave it: carried back as they came (their signatures vouch for them), to an
    # upstream of that provider only.
    thinking: tuple[str, ...] = ()
    # ``message_digest``'s, kept once made: a session's request holds the same messages
    # step after step, and each call's record hashes them all (a frozen message, whose
    # calls' arguments are not changed once it is made, keeps its digest).
    _digest: bytes | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """Whether the model must call a tool: "auto" (its choice), "none", "required" (some
    tool; Anthropic's "any") or "tool" (the one ``name``d)."""

    mode: ToolChoiceMode
    name: str = ""


@dataclass(frozen=True, slots=True)
class Params:
    """A client's generation settings for one step, in neutral words; each provider says
    them in its own (``stop`` is OpenAI's ``stop`` and Anthropic's ``stop_sequences``).
    None or empty: the provider's default. The gateway's own requests (a handoff's
    prose) carry none of them."""

    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    # The client's end-user id: OpenAI's ``user``, Anthropic's ``metadata.user_id``.
    user: str | None = None
    # The answer as JSON of this schema: OpenAI's ``response_format`` json_schema,
    # Anthropic's ``output_config.format``.
    json_schema: Mapping[str, Any] | None = None
    # How hard a reasoning model thinks: OpenAI's ``reasoning_effort``, Anthropic's
    # ``output_config.effort``.
    effort: str | None = None
    # Fields in one provider's own words, sent as they are to that provider only (a
    # client of the upstream's own format: ``seed``, ``top_k``, ...), keyed by format.
    native: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Request headers of a client of the upstream's own format, sent as they are with the
    # call (Anthropic's ``anthropic-beta``: Claude Code's betas, its effort setting's).
    headers: Mapping[str, str] = field(default_factory=dict)

    def sampling(self) -> dict[str, float]:
        """``temperature`` and ``top_p`` where set, as both providers name them."""
        pairs = (("temperature", self.temperature), ("top_p", self.top_p))
        return {name: value for name, value in pairs if value is not None}


NO_PARAMS = Params()


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    system: str
    tools: tuple[ToolSchema, ...]
    messages: tuple[Message, ...]
    max_tokens: int  # 0: no limit of ours (the provider's own maximum)
    # Index of the last message of the byte-stable prefix (the epoch's start); providers
    # with explicit cache breakpoints mark it and the last message.
    stable_prefix_end: int = -1
    # Index of the last message the previous request sent byte-for-byte the same: a
    # provider cache entry can exist up to here. After a fold it is just before the first
    # receipt, so a breakpoint there lets the fold request read what it kept.
    reuse_prefix_end: int = -1
    # The session's step this request answers (model calls so far): a recorded model
    # plays its turn by it, since a new segment starts with fewer messages.
    step: int = 0
    # "step" (the agent's next turn) or "handoff" (the prose of a new segment's handoff).
    purpose: str = "step"
    params: Params = NO_PARAMS


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0  # everything the provider counted as input, cached included
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """What the model answered."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = ""
    latency_ms: int = 0
    # The client's stop sequence that ended the text (its stop_reason is then
    # "end_turn"), where the provider says which (Anthropic does, OpenAI does not).
    stop_sequence: str | None = None
    thinking: tuple[str, ...] = ()  # as Message.thinking: the blocks before the text, in order


@dataclass(frozen=True, slots=True)
class TurnDelta:
    """A piece of a turn as the upstream streams it: ``text``, or for the tool call at
    ``call`` (its place in the turn) its start (``call_id`` and ``name``) or a piece of
    its arguments' JSON (``text``), or of a thinking block: a piece of its ``thinking``,
    the ``signature`` that ends it, or a ``redacted`` block whole. The pieces, joined,
    are the turn the call returns."""

    text: str = ""
    call: int | None = None
    call_id: str = ""
    name: str = ""
    thinking: str = ""
    signature: str = ""
    redacted: str = ""


def serialize_message(message: Message) -> str:
    """Canonical one-line JSON of a message: no timestamps, no ids minted at send time."""
    body: dict[str, Any] = {"role": message.role, "text": message.text}
    if message.tool_calls:
        body["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        body["tool_call_id"] = message.tool_call_id
        body["tool_name"] = message.tool_name
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def message_digest(message: Message) -> bytes:
    """The sha256 of what ``serialize_message`` holds of ``message`` (and its
    ``tool_name`` even without an id), without escaping its text as JSON (most of a long
    session's bytes, and most of the time that took): a JSON head of the other fields
    and the text's length, then the text as it is."""
    if message._digest is None:
        digest = hashlib.sha256(digest_head(message).encode("utf-8", "surrogatepass"))
        digest.update(message.text.encode("utf-8", "surrogatepass"))  # an upstream's text may hold half a pair
        object.__setattr__(message, "_digest", digest.digest())
    return message._digest


def digests_carried(held: Sequence[Message], messages: Sequence[Message]) -> None:
    """Give ``messages`` the digests ``held`` (a history digested before) made already,
    message for message while the two are alike in what a digest holds: a client resends
    its whole history with every request, all of it but the newest messages digested for
    the request before. Comparing them costs a fraction of hashing them again."""
    for old, new in zip(held, messages, strict=False):
        try:
            alike = (old.text == new.text and old.role == new.role and old.tool_call_id == new.tool_call_id
                     and old.tool_name == new.tool_name and _calls_alike(old.tool_calls, new.tool_calls))
        except RecursionError:  # arguments nested deeper than Python recurses: hashed instead
            return
        if not alike:
            return
        if new._digest is None:
            object.__setattr__(new, "_digest", old._digest)


def _calls_alike(one: tuple[ToolCall, ...], other: tuple[ToolCall, ...]) -> bool:
    return len(one) == len(other) and all(
        a.id == b.id and a.name == b.name and _same_json(a.arguments, b.arguments) for a, b in zip(one, other, strict=True))


def _same_json(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are written alike as JSON: Python's equality takes 1, 1.0
    and True (and 0.0 and -0.0) for one another, JSON does not."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return a.keys() == b.keys() and all(_same_json(value, b[name]) for name, value in a.items())
    if kind is list:
        return len(a) == len(b) and all(map(_same_json, a, b))
    if kind is float:
        return repr(a) == repr(b)
    return kind in (str, int, bool, type(None)) and a == b


def digest_head(message: Message) -> str:
    """``message_digest``'s head: the JSON of [role, the text's length, the calls as
    [id, name, arguments], tool_call_id, tool_name], byte for byte what json.dumps
    writes (with sorted keys, no spaces, no escapes beyond JSON's own). Written out
    here with json's own encoders, made once, several times faster than json.dumps
    (a long session's request hashes some 1,200 heads)."""
    calls = ",".join(f"[{_json_optional(c.id)},{_json_optional(c.name)},{_CANONICAL.encode(c.arguments)}]"
                     for c in message.tool_calls)
    return (f"[{_json_string(message.role)},{len(message.text)},[{calls}],{_json_optional(message.tool_call_id)},"
            f"{_json_optional(message.tool_name)}]")


_json_string = json.encoder.encode_basestring  # json.dumps' own, for ensure_ascii=False
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _json_optional(text: str | None) -> str:
    return "null" if text is None else _json_string(text)


def serialize_request(request: Request) -> str:
    head = json.dumps(
        {
            "system": request.system,
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ],
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return head + "\n" + "".join(serialize_message(m) for m in request.messages)
