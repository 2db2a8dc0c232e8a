"""A turn as the events of each format's stream, written piece by piece as the
upstream streams it (``TurnDelta``): the opening events before the first piece, each
piece's events as it arrives, the closing ones (stop reason, usage) once the turn is
whole. A turn that arrived whole is written the same way (``WireFormat.stream``), so a
client sees the same shapes either way.

The closing events take the stop reason and usage from the format's own whole response
(``Answer``), so a stream ends as that response says.
"""

from __future__ import annotations

import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from observations.gateway.messages import ModelTurn, TurnDelta

Answer = Callable[[ModelTurn], dict[str, Any]]  # the format's whole response to the request


def sse_data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def sse_event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


class TurnEvents(ABC):
    @abstractmethod
    def opening(self) -> list[bytes]: ...

    @abstractmethod
    def piece(self, delta: TurnDelta) -> list[bytes]: ...

    @abstractmethod
    def closing(self, turn: ModelTurn) -> list[bytes]: ...


class MessageEvents(TurnEvents):
    """Anthropic's message_start … content blocks … message_delta, message_stop. Each
    thinking block is a block (its thinking, then its signature), the text one block,
    each tool call one more. The usage goes whole in message_delta (the SDK reads the
    cumulative counts there), not known at message_start."""

    def __init__(self, model: str, answer: Answer) -> None:
        self.id, self.model, self.answer = new_id("msg_"), model, answer
        self.block = -1
        self.open: str | int | None = None  # "thinking", "text" or the tool call's place in the turn

    def opening(self) -> list[bytes]:
        usage = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 0}
        return [sse_event("message_start", {"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})]

    def piece(self, delta: TurnDelta) -> list[bytes]:
        if delta.thinking or delta.signature or delta.redacted:
            return self._thinking(delta)
        out: list[bytes] = []
        owner = "text" if delta.call is None else delta.call
        if owner != self.open:
            out += self._stop()
            self.block, self.open = self.block + 1, owner
            first = {"type": "text", "text": ""} if delta.call is None else \
                {"type": "tool_use", "id": delta.call_id, "name": delta.name, "input": {}}
            out.append(sse_event("content_block_start", {"type": "content_block_start", "index": self.block,
                                                         "content_block": first}))
        if delta.text:
            wire = {"type": "text_delta", "text": delta.text} if delta.call is None else \
                {"type": "input_json_delta", "partial_json": delta.text}
            out.append(sse_event("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                                         "delta": wire}))
        return out

    def _thinking(self, delta: TurnDelta) -> list[bytes]:
        out: list[bytes] = []
        if delta.redacted or self.open != "thinking":
            out += self._stop()
            self.block, self.open = self.block + 1, "thinking"
            first = {"type": "redacted_thinking", "data": delta.redacted} if delta.redacted else \
                {"type": "thinking", "thinking": "", "signature": ""}
            out.append(sse_event("content_block_start", {"type": "content_block_start", "index": self.block,
                                                         "content_block": first}))
        if delta.thinking:
            out.append(sse_event("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                                         "delta": {"type": "thinking_delta",
                                                                   "thinking": delta.thinking}}))
        if delta.signature:  # it ends its block: the next thinking is a block of its own
            out.append(sse_event("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                                         "delta": {"type": "signature_delta",
                                                                   "signature": delta.signature}}))
        if delta.signature or delta.redacted:
            out += self._stop()
        return out

    def closing(self, turn: ModelTurn) -> list[bytes]:
        whole = self.answer(turn)
        return [*self._stop(), sse_event("message_delta", {
            "type": "message_delta", "delta": {"stop_reason": whole["stop_reason"],
                                               "stop_sequence": whole["stop_sequence"]},
            "usage": whole["usage"]}), sse_event("message_stop", {"type": "message_stop"})]

    def _stop(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [sse_event("content_block_stop", {"type": "content_block_stop", "index": self.block})]


class ChunkEvents(TurnEvents):
    """Chat Completions chunks, then ``[DONE]``; the usage chunk only when the client
    asked for it (``stream_options.include_usage``), as OpenAI sends it."""

    def __init__(self, model: str, body: Mapping[str, Any], answer: Answer) -> None:
        self.head = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model}
        options = body.get("stream_options")
        self.usage = isinstance(options, dict) and options.get("include_usage") is True
        self.answer = answer

    def opening(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def piece(self, delta: TurnDelta) -> list[bytes]:
        if delta.thinking or delta.signature or delta.redacted:
            return []  # Chat Completions has no thinking to show
        if delta.call is None:
            return [self._chunk({"content": delta.text})]
        call: dict[str, Any] = {"index": delta.call, "function": {"arguments": delta.text}}
        if delta.call_id:
            call.update(id=delta.call_id, type="function", function={"name": delta.name, "arguments": delta.text})
        return [self._chunk({"tool_calls": [call]})]

    def closing(self, turn: ModelTurn) -> list[bytes]:
        whole = self.answer(turn)
        out = [self._chunk({}, whole["choices"][0]["finish_reason"])]
        if self.usage:
            out.append(sse_data({**self.head, "choices": [], "usage": whole["usage"]}))
        return [*out, b"data: [DONE]\n\n"]

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse_data({**self.head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                                   "logprobs": None}]})


class ResponseEvents(TurnEvents):
    """The Responses stream: response.created … each output item (added, its deltas,
    done) … response.completed (or .incomplete), whose output is the items as they were
    done. A call still open at the end is done with its arguments as the whole response
    gives them; a free-form (custom) tool's input, one JSON argument upstream, is sent
    whole when its call ends."""

    def __init__(self, model: str, body: Mapping[str, Any], answer: Answer, *, custom: set[str],
                 namespaces: Mapping[str, str]) -> None:
        self.answer, self.custom, self.namespaces = answer, custom, namespaces
        self.shell = {**answer(ModelTurn("", model=model)), "status": "in_progress", "incomplete_details": None,
                      "output": [], "usage": None}
        self.events = 0
        self.added = 0  # output items so far
        self.done: list[dict[str, Any]] = []  # the items done, in order: the response's output
        self.open: dict[str, Any] | None = None
        self.text = ""  # the open message's text, or a custom call's input so far

    def opening(self) -> list[bytes]:
        return [self._emit("response.created", response=self.shell),
                self._emit("response.in_progress", response=self.shell)]

    def piece(self, delta: TurnDelta) -> list[bytes]:
        if delta.thinking or delta.signature or delta.redacted:
            return []  # no reasoning items: the gateway returns none (README)
        out: list[bytes] = []
        if delta.call is None:
            if self.open is None or self.open["type"] != "message":
                out += self._close()
                out += self._added({"type": "message", "id": new_id("msg_"), "status": "in_progress",
                                    "role": "assistant", "content": []})
                out.append(self._emit("response.content_part.added", **self._ids(), content_index=0,
                                      part={"type": "output_text", "text": "", "annotations": []}))
            self.text += delta.text
            out.append(self._emit("response.output_text.delta", **self._ids(), content_index=0, delta=delta.text,
                                  logprobs=[]))
            return out
        if delta.call_id:
            out += self._close()
            if delta.name in self.custom:
                item = {"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": delta.call_id,
                        "name": delta.name, "input": "", "status": "in_progress"}
            else:
                item = {"type": "function_call", "id": new_id("fc_"), "call_id": delta.call_id, "name": delta.name,
                        "arguments": "", "status": "in_progress"}
                if delta.name in self.namespaces:
                    item["namespace"] = self.namespaces[delta.name]
            out += self._added(item)
        if delta.text and self.open is not None and self.open["type"] == "function_call":
            self.open["arguments"] += delta.text
            out.append(self._emit("response.function_call_arguments.delta", **self._ids(), delta=delta.text))
        elif delta.text:
            self.text += delta.text
        return out

    def closing(self, turn: ModelTurn) -> list[bytes]:
        whole = self.answer(turn)
        calls = {item["call_id"]: item for item in whole["output"] if "call_id" in item}
        out = self._close(calls)
        whole.update(id=self.shell["id"], created_at=self.shell["created_at"], output=self.done)
        kind = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
        return [*out, self._emit(kind, response=whole)]

    def _added(self, item: dict[str, Any]) -> list[bytes]:
        self.open, self.text = item, ""
        self.added += 1
        return [self._emit("response.output_item.added", output_index=self.added - 1, item=item)]

    def _close(self, calls: Mapping[str, dict[str, Any]] | None = None) -> list[bytes]:
        """The open item's done events; ``calls``: the whole response's calls by call id,
        at the end (an item closed earlier is done as it was streamed)."""
        item, self.open = self.open, None
        if item is None:
            return []
        ids = {"item_id": item["id"], "output_index": self.added - 1}
        whole = (calls or {}).get(item.get("call_id", ""))
        out: list[bytes] = []
        if item["type"] == "message":
            part = {"type": "output_text", "text": self.text, "annotations": []}
            out += [self._emit("response.output_text.done", **ids, content_index=0, text=self.text, logprobs=[]),
                    self._emit("response.content_part.done", **ids, content_index=0, part=part)]
            finished = {**item, "status": "completed", "content": [part]}
        elif item["type"] == "function_call":
            finished = {**(whole or {**item, "arguments": item["arguments"] or "{}"}), "id": item["id"],
                        "status": "completed"}
            out.append(self._emit("response.function_call_arguments.done", **ids, arguments=finished["arguments"]))
        else:
            finished = {**(whole or {**item, "input": _custom_input(self.text)}), "id": item["id"],
                        "status": "completed"}
            out += [self._emit("response.custom_tool_call_input.delta", **ids, delta=finished["input"]),
                    self._emit("response.custom_tool_call_input.done", **ids, input=finished["input"])]
        self.done.append(finished)
        out.append(self._emit("response.output_item.done", output_index=ids["output_index"], item=finished))
        return out

    def _ids(self) -> dict[str, Any]:
        assert self.open is not None
        return {"item_id": self.open["id"], "output_index": self.added - 1}

    def _emit(self, kind: str, **fields: Any) -> bytes:
        self.events += 1
        return sse_event(kind, {"type": kind, "sequence_number": self.events - 1, **fields})


def _custom_input(arguments: str) -> str:
    """A free-form call's input from its one JSON argument, as the whole response gives it."""
    try:
        value = json.loads(arguments).get("input")
    except (ValueError, AttributeError):
        return arguments
    return value if isinstance(value, str) else arguments
