"""`anthropic:<model>`: the Messages API through the official SDK.

Translation rules the API enforces: the system prompt is a block list; tool results
are ``tool_result`` blocks in a user message, consecutive ones merged into one message
(roles must alternate); a ``tool_use`` input is always an object (``{}``, never null);
text blocks are never empty; tool-use inputs are sent with sorted keys (stable bytes
across a resume from storage that reorders them).

Cache breakpoints: the API reads a cached prefix only at an explicit breakpoint (or a
few blocks before one), so every prefix a request may find cached is marked: the end
of system+tools, the message at ``reuse_prefix_end`` (what the previous request sent
unchanged: after a fold, what the fold kept), the message at ``stable_prefix_end``
(the epoch's start) and the last message, which writes the entry the next request
reads. Marks on the same block merge; the API allows four.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic

from agents.providers.ambient import withheld_headers
from agents.providers.base import DeltaSink
from agents.providers.errors import ProviderError, Transient, error_from_status, sdk_errors
from agents.providers.sdk_body import as_built
from agents.providers.timeouts import DEFAULT_TIMEOUTS, Timeouts
from agents.providers.toolcalls import canonical, parse_arguments
from observations.gateway import messages as neutral
from observations.gateway.messages import Message, ModelTurn, Params, Request, ToolCall, Usage

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_CACHE_BREAKPOINTS = 4
# The Messages API needs max_tokens. A request without a limit of ours (Request.max_tokens
# 0: a handoff's prose, where a reasoning model must not run out while thinking) gets
# the most current Claude models accept.
UNBOUNDED_MAX_TOKENS = 32_000
EMPTY_TEXT = "(empty)"  # the API refuses empty text blocks

_CACHE = {"type": "ephemeral"}
THINKING_BLOCKS = ("thinking", "redacted_thinking")
MIN_THINKING_BUDGET = 1024  # the API's least budget_tokens
_TOOL_CHOICE = {"auto": "auto", "none": "none", "required": "any", "tool": "tool"}
_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "end_turn",
    "refusal": "refusal",
}


class AnthropicProvider:
    http_client_class = anthropic.DefaultHttpxClient  # the SDK's defaults; see agents/providers/checked_http.py

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = ANTHROPIC_DEFAULT_BASE_URL,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        environment_headers: bool = True,
        http_client: Any = None,
    ) -> None:
        """``environment_headers=False``: an endpoint the environment's settings are not
        for (see ``ambient``) gets none of the headers the SDK reads from it."""
        self.model = model
        self.spec = f"anthropic:{model}"
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeouts = timeouts
        # An explicit timeout also stops the SDK from refusing large non-streaming
        # max_tokens values ("streaming is required ..."): the bound is ours to set.
        headers = None
        if not environment_headers:
            headers = withheld_headers(
                "ANTHROPIC_CUSTOM_HEADERS", api_key=api_key, omit=anthropic.Omit()
            )
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=self.base_url,
            timeout=timeouts.for_sdk(),
            max_retries=0,
            default_headers=headers,
            http_client=http_client,
        )

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def complete(self, request: Request, on_delta: DeltaSink | None = None) -> ModelTurn:
        params = to_messages_params(request, model=self.model)
        started = time.monotonic()
        with sdk_errors(
            anthropic,
            base_error=anthropic.AnthropicError,
            spec=self.spec,
            base_url=self.base_url,
            timeouts=self._timeouts,
            api_key=self._api_key,
            code_of=lambda exc: exc.error_code or exc.type,
        ):
            if on_delta is None:
                message = self._client.messages.create(**as_built(params))
            else:
                message = self._streamed(params, on_delta)
        latency_ms = int((time.monotonic() - started) * 1000)
        return from_message(message, latency_ms=latency_ms)


    def _streamed(self, params: dict[str, Any], on_delta: DeltaSink) -> Any:
        """The message as the SDK's stream builds it, its pieces given to ``on_delta``
        as they arrive (``_Pieces``). An error event in the stream is the failure its
        type says; a stream that ends before the message's stop reason is cut off."""
        pieces = _Pieces(on_delta)
        with self._client.messages.stream(**as_built(params)) as stream:
            if not stream.response.headers.get("content-type", "").startswith("text/event-stream"):
                return anthropic.types.Message.model_validate_json(stream.response.read())  # answered whole
            try:
                for event in stream:
                    pieces.read(event)
            except anthropic.APIStatusError as exc:
                if exc.status_code != 200:
                    raise
                raise _stream_error(self.spec, exc.body, self._api_key) from None
            message = stream.get_final_message()
        if message.stop_reason is None:
            raise Transient(f"{self.spec}: the stream ended before the answer did (no stop_reason)",
                            spec=self.spec)
        return message


class _Pieces:
    """An Anthropic stream's events as the pieces of the turn ``from_message`` makes of
    the message: its text blocks joined by a newline, a call with no input as ``{}``."""

    def __init__(self, on_delta: DeltaSink) -> None:
        self.on_delta = on_delta
        self.calls: dict[int, int] = {}  # content block index: the tool call's place in the turn
        self.argued: set[int] = set()  # the call blocks that streamed some input
        self.text_block: int | None = None  # the block the last text came from

    def read(self, event: Any) -> None:
        if event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.calls[event.index] = len(self.calls)
                self.on_delta(neutral.TurnDelta(call=self.calls[event.index], call_id=block.id, name=block.name))
            elif block.type == "redacted_thinking":
                self.on_delta(neutral.TurnDelta(redacted=block.data))
        elif event.type == "content_block_delta":
            self._delta(event.index, event.delta)
        elif event.type == "content_block_stop" and event.index in self.calls and event.index not in self.argued:
            self.on_delta(neutral.TurnDelta(call=self.calls[event.index], text="{}"))

    def _delta(self, index: int, delta: Any) -> None:
        if delta.type == "thinking_delta":
            self.on_delta(neutral.TurnDelta(thinking=delta.thinking))
        elif delta.type == "signature_delta":
            self.on_delta(neutral.TurnDelta(signature=delta.signature))
        elif delta.type == "text_delta" and delta.text:
            joint = "\n" if self.text_block not in (None, index) else ""
            self.text_block = index
            self.on_delta(neutral.TurnDelta(text=joint + delta.text))
        elif delta.type == "input_json_delta" and delta.partial_json and index in self.calls:
            self.argued.add(index)
            self.on_delta(neutral.TurnDelta(call=self.calls[index], text=delta.partial_json))


# An error event inside a stream (its HTTP status was 200): the status its type stands for.
_STREAM_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "timeout_error": 504,
                        "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                        "not_found_error": 404, "request_too_large": 413}


def _stream_error(spec: str, body: Any, api_key: str) -> ProviderError:
    kind = (body.get("error") or {}).get("type") if isinstance(body, dict) else None
    return error_from_status(spec=spec, status=_STREAM_ERROR_STATUS.get(kind or "", 500), headers={},
                             body_text=json.dumps(body) if body is not None else "", code=kind, secrets=[api_key])


def to_messages_params(request: Request, *, model: str) -> dict[str, Any]:
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens or UNBOUNDED_MAX_TOKENS}
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    system = [{"type": "text", "text": request.system}] if request.system else []
    # Tools precede the system prompt in the cached prefix, so one breakpoint on the
    # last system block (or the last tool without one) covers both.
    prefix_owner = system[-1] if system else (tools[-1] if tools else None)
    if prefix_owner is not None:
        prefix_owner["cache_control"] = dict(_CACHE)
    if tools:
        params["tools"] = tools
    if system:
        params["system"] = system

    wire, last_block = _wire_messages(request.messages)
    budget = MAX_CACHE_BREAKPOINTS - (1 if prefix_owner is not None else 0)
    for wire_index, block_index in _message_breakpoints(request, last_block)[:budget]:
        wire[wire_index]["content"][block_index]["cache_control"] = dict(_CACHE)
    params["messages"] = wire
    params.update(messages_settings(request.params, tools=bool(request.tools)))
    # Through the SDK's extra_body, never over a field set here: its create() takes only
    # the fields it knows, and it no longer knows temperature and top_p (whether a model
    # takes them is the API's to say, as it would say it to the client itself).
    native = _thinking_within(request.params.native.get("anthropic", {}), params["max_tokens"],
                              dict(request.params.headers))
    extra = {k: v for k, v in {**request.params.sampling(), **native}.items() if k not in params}
    if extra:
        params["extra_body"] = extra
    if request.params.headers:
        params["extra_headers"] = dict(request.params.headers)
    return params


def _thinking_within(native: dict[str, Any], max_tokens: int, headers: dict[str, str]) -> dict[str, Any]:
    """The client's settings with its thinking budget below the output limit the step
    sends (the API refuses a budget of max_tokens or more, but with interleaved
    thinking; the gateway may lower the limit the client asked for): half of it, the
    other half the answer's, or no thinking where half is under the least budget."""
    thinking = native.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    interleaved = "interleaved-thinking" in headers.get("anthropic-beta", "")
    if not isinstance(budget, int) or budget < max_tokens or interleaved:
        return native
    if max_tokens // 2 < MIN_THINKING_BUDGET:
        return {k: v for k, v in native.items() if k != "thinking"}
    return {**native, "thinking": {**thinking, "budget_tokens": max_tokens // 2}}


def messages_settings(settings: Params, *, tools: bool) -> dict[str, Any]:
    """A client's settings the SDK takes, in Messages API words: ``stop_sequences``, a tool choice of
    type auto / none / any / tool, no parallel calls as the choice's
    ``disable_parallel_tool_use`` (on an "auto" choice when none was given; a "none"
    choice has no such field). Tool settings only go with tools."""
    out: dict[str, Any] = {}
    if settings.stop:
        out["stop_sequences"] = list(settings.stop)
    if settings.user:
        out["metadata"] = {"user_id": settings.user}
    config: dict[str, Any] = {}
    if settings.json_schema is not None:
        config["format"] = {"type": "json_schema", "schema": dict(settings.json_schema)}
    if settings.effort:
        config["effort"] = settings.effort
    if config:
        out["output_config"] = config
    choice = settings.tool_choice
    if tools and (choice is not None or settings.parallel_tool_calls is False):
        mode = choice.mode if choice is not None else "auto"
        wire: dict[str, Any] = {"type": _TOOL_CHOICE[mode]}
        if mode == "tool":
            wire["name"] = choice.name if choice is not None else ""
        if settings.parallel_tool_calls is False and mode != "none":
            wire["disable_parallel_tool_use"] = True
        out["tool_choice"] = wire
    return out


def _message_breakpoints(
    request: Request, last_block: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The wire blocks to mark, distinct, the one most worth keeping first.

    The last message comes first: it writes what the next request reads. Then the
    reuse point, which this request reads; the epoch's start only helps when that
    entry is gone. (The system+tools mark, kept above all, is not a message block.)
    """
    if not request.messages:
        return []
    marks = [last_block[-1]]
    for index in (request.reuse_prefix_end, request.stable_prefix_end):
        if 0 <= index < len(request.messages):
            marks.append(last_block[index])
    return list(dict.fromkeys(marks))


def _wire_messages(
    messages: tuple[Message, ...],
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """Wire messages, and for each neutral message where its last block ended up."""
    wire: list[dict[str, Any]] = []
    last: list[tuple[int, dict[str, Any]]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if wire and wire[-1]["role"] == role:
            # Consecutive tool results (and a steer after them) share one user message;
            # tool_result blocks stay first because tool messages precede the steer. An
            # assistant's thinking stays first in its message.
            content = wire[-1]["content"]
            content.extend(blocks)
            content.sort(key=lambda b: b["type"] not in THINKING_BLOCKS)
        else:
            wire.append({"role": role, "content": blocks})
        last.append((len(wire) - 1, blocks[-1]))
    return wire, [(i, next(j for j, b in enumerate(wire[i]["content"]) if b is block)) for i, block in last]


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.text:
            block["content"] = message.text
        return [block]
    if message.role == "user":
        return [{"type": "text", "text": message.text or EMPTY_TEXT}]
    # Its thinking first, as the provider gave it: the signatures vouch for the bytes.
    blocks: list[dict[str, Any]] = [json.loads(block) for block in message.thinking]
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": canonical(dict(call.arguments or {})),
            }
        )
    # Never thinking alone (nor last: a cache mark may not go on it).
    return blocks if blocks[len(message.thinking):] else [*blocks, {"type": "text", "text": EMPTY_TEXT}]


def from_message(message: Any, *, latency_ms: int) -> ModelTurn:
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[str] = []
    for block in message.content:
        if block.type in THINKING_BLOCKS:
            thinking.append(json.dumps(block.model_dump(mode="json", exclude_none=True), ensure_ascii=False))
        elif block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(
                ToolCall(id=block.id, name=block.name, arguments=parse_arguments(block.input))
            )
    stop = _STOP_REASONS.get(message.stop_reason or "", message.stop_reason or "")
    return ModelTurn(
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        usage=_usage(message.usage),
        model=message.model or "",
        stop_reason=stop,
        latency_ms=latency_ms,
        stop_sequence=message.stop_sequence if message.stop_reason == "stop_sequence" else None,
        thinking=tuple(thinking),
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    details = getattr(usage, "output_tokens_details", None)
    return Usage(
        # Anthropic's input_tokens counts only the uncached tail after the last breakpoint.
        input_tokens=(usage.input_tokens or 0) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=(details.thinking_tokens if details else 0) or 0,
    )
