"""`openai:<model>`: Chat Completions through the official SDK.

Works with OpenAI and with servers that speak the same wire protocol (DeepSeek, vLLM,
Ollama, llama.cpp, OpenRouter) through a configurable base URL. The SDK's own retries
are off: ResilientProvider owns the retry policy.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import openai

from agents.providers.ambient import withheld_headers
from agents.providers.base import DeltaSink
from agents.providers.errors import Rejected, Transient, sdk_errors
from agents.providers.sdk_body import as_built
from agents.providers.timeouts import DEFAULT_TIMEOUTS, Timeouts
from agents.providers.toolcalls import call_arguments_text, parse_arguments
from observations.gateway.messages import (
    ModelTurn,
    Params,
    Request,
    ToolCall,
    TurnDelta,
    Usage,
    serialize_request,
)

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIProvider:
    http_client_class = openai.DefaultHttpxClient  # the SDK's defaults; see agents/providers/checked_http.py

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = OPENAI_DEFAULT_BASE_URL,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        token_limit_field: str | None = None,
        environment_headers: bool = True,
        http_client: Any = None,
    ) -> None:
        """``environment_headers=False``: an endpoint the environment's settings are not
        for (see ``ambient``) gets none of the headers the SDK reads from it."""
        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeouts = timeouts
        # OpenAI's own API deprecated `max_tokens` for `max_completion_tokens` (reasoning
        # models refuse the old name); compatible servers mostly know only `max_tokens`.
        self.token_limit_field = token_limit_field or (
            "max_completion_tokens" if self.base_url == OPENAI_DEFAULT_BASE_URL else "max_tokens"
        )
        headers = None
        if not environment_headers:
            headers = withheld_headers(
                "OPENAI_CUSTOM_HEADERS",
                api_key=api_key,
                omit=openai.Omit(),
                also=("OpenAI-Organization", "OpenAI-Project"),
            )
        self._client = openai.OpenAI(
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
        params = to_chat_params(request, model=self.model, token_limit_field=self.token_limit_field)
        started = time.monotonic()
        with sdk_errors(
            openai,
            base_error=openai.OpenAIError,
            spec=self.spec,
            base_url=self.base_url,
            timeouts=self._timeouts,
            api_key=self._api_key,
            code_of=lambda exc: exc.code,
        ):
            if on_delta is not None:
                return self._streamed(params, request, on_delta, started)
            completion = self._client.chat.completions.create(**as_built(params))
        latency_ms = int((time.monotonic() - started) * 1000)
        return from_chat_completion(
            completion, request=request, spec=self.spec, latency_ms=latency_ms
        )

    def _streamed(
        self, params: dict[str, Any], request: Request, on_delta: DeltaSink, started: float
    ) -> ModelTurn:
        """The turn from the chunks of a stream, its text and tool calls given to
        ``on_delta`` as they arrive (a call's id minted as ``from_chat_completion``
        mints it, at its first chunk, where the server sends none)."""
        text: list[str] = []
        calls: dict[int, list[str]] = {}  # the chunk's call index: id, name, arguments so far
        finish, model, usage = "", "", None
        try:
            stream = self._client.chat.completions.create(
                **as_built(params), stream=True, stream_options={"include_usage": True}
            )
        except openai.BadRequestError as exc:
            if "stream_options" not in str(exc):
                raise
            # A compatible server that takes no stream_options: its stream, without usage.
            stream = self._client.chat.completions.create(**as_built(params), stream=True)
        with stream:
            if not _is_event_stream(stream.response):  # a server that answers a stream whole
                whole = openai.types.chat.ChatCompletion.model_validate_json(stream.response.read())
                return from_chat_completion(whole, request=request, spec=self.spec,
                                            latency_ms=int((time.monotonic() - started) * 1000))
            for chunk in stream:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices[:1]:
                    finish = choice.finish_reason or finish
                    if choice.delta.content:
                        text.append(choice.delta.content)
                        on_delta(TurnDelta(text=choice.delta.content))
                    for piece in choice.delta.tool_calls or ():
                        function = piece.function
                        if piece.index not in calls:
                            call_id = piece.id or _minted_call_id(request, len(calls))
                            calls[piece.index] = [call_id, (function.name if function else "") or "", ""]
                            on_delta(TurnDelta(call=len(calls) - 1, call_id=call_id, name=calls[piece.index][1]))
                        if function is not None and function.arguments:
                            calls[piece.index][2] += function.arguments
                            on_delta(TurnDelta(call=list(calls).index(piece.index), text=function.arguments))
        if not finish:  # the server ended the stream in mid-answer
            raise Transient(f"{self.spec}: the stream ended before the answer did (no finish_reason)",
                            spec=self.spec)
        tool_calls = tuple(ToolCall(id=c[0], name=c[1], arguments=parse_arguments(c[2])) for c in calls.values())
        stop = "tool_use" if tool_calls else _STOP_REASONS.get(finish, finish)
        return ModelTurn(
            text="".join(text),
            tool_calls=tool_calls,
            usage=_usage(usage),
            model=model,
            stop_reason=stop,
            latency_ms=int((time.monotonic() - started) * 1000),
        )


def _is_event_stream(response: Any) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def to_chat_params(request: Request, *, model: str, token_limit_field: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "user":
            messages.append({"role": "user", "content": message.text})
        elif message.role == "tool":
            messages.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
            )
        else:
            wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                wire["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": call_arguments_text(call),
                        },
                    }
                    for call in message.tool_calls
                ]
            elif not message.text:
                wire["content"] = ""
            messages.append(wire)
    params: dict[str, Any] = {"model": model, "messages": messages}
    if request.max_tokens:  # 0: no limit of ours, the server's own maximum
        params[token_limit_field] = request.max_tokens
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    params.update(chat_settings(request.params, tools=bool(request.tools)))
    # Through the SDK's extra_body (its create() takes only the fields it knows); never
    # over a field set here.
    extra = {k: v for k, v in request.params.native.get("openai", {}).items() if k not in params}
    if extra:
        params["extra_body"] = extra
    return params


def chat_settings(settings: Params, *, tools: bool) -> dict[str, Any]:
    """A client's settings in Chat Completions words. A tool choice and
    ``parallel_tool_calls`` only go with tools: the API refuses them without."""
    out: dict[str, Any] = dict(settings.sampling())
    if settings.stop:
        out["stop"] = list(settings.stop)
    if settings.user:
        out["user"] = settings.user
    if settings.json_schema is not None:
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": dict(settings.json_schema)},
        }
    if settings.effort:
        out["reasoning_effort"] = settings.effort
    if tools and (choice := settings.tool_choice) is not None:
        out["tool_choice"] = (
            {"type": "function", "function": {"name": choice.name}}
            if choice.mode == "tool"
            else choice.mode
        )
    if tools and settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    return out


def from_chat_completion(
    completion: Any, *, request: Request, spec: str, latency_ms: int
) -> ModelTurn:
    if not completion.choices:
        raise Rejected(f"{spec}: the response holds no choices", spec=spec)
    choice = completion.choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    for index, call in enumerate(message.tool_calls or ()):
        function = getattr(call, "function", None)
        if function is None:  # a custom (non-function) tool call: none were offered
            continue
        calls.append(
            ToolCall(
                id=call.id or _minted_call_id(request, index),
                name=function.name,
                arguments=parse_arguments(function.arguments),
            )
        )
    stop = _STOP_REASONS.get(choice.finish_reason or "", choice.finish_reason or "")
    if calls:
        # Some compatible servers answer "stop" even when they called tools.
        stop = "tool_use"
    return ModelTurn(
        text=message.content or "",
        tool_calls=tuple(calls),
        usage=_usage(completion.usage),
        model=completion.model or "",
        stop_reason=stop,
        latency_ms=latency_ms,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    cached = (prompt_details.cached_tokens if prompt_details else None) or 0
    if not cached:
        # DeepSeek reports its prefix cache outside prompt_tokens_details.
        cached = (usage.model_extra or {}).get("prompt_cache_hit_tokens") or 0
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        cached_input_tokens=int(cached),
        cache_write_tokens=(prompt_details.cache_write_tokens if prompt_details else None) or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=(completion_details.reasoning_tokens if completion_details else None) or 0,
    )


def _minted_call_id(request: Request, index: int) -> str:
    """A stable id for servers that omit one: same request, same id (idempotent resume)."""
    digest = hashlib.sha256(f"{serialize_request(request)}\0{index}".encode()).hexdigest()
    return f"call_{digest[:24]}"
