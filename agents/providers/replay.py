"""`replay:<file>`: plays recorded assistant turns (demo, tests, evaluation).

File format (JSON, UTF-8)::

    {
      "model": "recorded-model",            # optional, reported as ModelTurn.model
      "turns": [                            # a bare list is accepted as the turns
        {
          "text": "I'll run the tests first.",               # optional, default ""
          "tool_calls": [                                     # optional, default []
            {"name": "shell", "arguments": {"command": "pytest -q"}, "id": "optional"}
          ],
          "usage": {"input_tokens": 1200, "output_tokens": 40}, # optional; any Usage field
          "stop_reason": "tool_use"                            # optional
        }
      ]
    }

The turn played is the request's step (the model calls the session made before it; the
number of assistant messages in the request when no step is given), so the provider
is stateless: a resumed session, or one that started a new segment with fewer
messages, continues at the right turn, and the same request always gets the same
answer (tool call ids included: ``replay-<turn>-<call>`` unless the file gives one).
A request for a handoff's prose is answered from ``"handoffs"`` (a list of texts,
one per reset, the last one repeated) or, without it, by a line saying so. After the last turn it answers with a final text turn
that says the recording ended. Without recorded usage, usage is estimated from the
request with the gateway's token estimator, deterministically.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from agents.providers.errors import InvalidModelSpec
from observations.gateway.breakdown import tool_wire
from observations.gateway.messages import ModelTurn, Request, ToolCall, Usage
from observations.gateway.tokens import estimate_request_message, estimate_tokens

DEFAULT_REPLAY_DIR = Path(__file__).resolve().parent.parent / "replays"
_USAGE_FIELDS = frozenset(f.name for f in fields(Usage))
_HANDOFF_HEADING = re.compile(r"# Handoff: segment (\d+)")


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    text: str
    tool_calls: tuple[tuple[str | None, str, dict[str, Any]], ...]  # (id, name, arguments)
    usage: Usage | None
    stop_reason: str | None


class ReplayProvider:
    def __init__(
        self, path: Path, *, model: str, turns: tuple[RecordedTurn, ...], name: str | None = None,
        handoffs: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.spec = f"replay:{name or path.name}"
        self.model = model
        self.turns = turns
        self.handoffs = handoffs

    @classmethod
    def from_spec(cls, name: str, *, replay_dir: Path | str | None = None) -> ReplayProvider:
        path = resolve_replay_path(name, replay_dir=replay_dir)
        model, turns, handoffs = load_recording(path)
        return cls(path, model=model, turns=turns, name=name, handoffs=handoffs)

    def complete(self, request: Request) -> ModelTurn:
        if request.purpose == "handoff":
            return self._handoff(request)
        played = max(request.step, sum(1 for m in request.messages if m.role == "assistant"))
        if played >= len(self.turns):
            text = (
                f"The recording {self.path.name} has ended after {len(self.turns)} turns; "
                "there is nothing more to replay."
            )
            return ModelTurn(
                text=text,
                usage=self._estimate(request, text, (), played),
                model=self.model,
                stop_reason="end_turn",
            )
        turn = self.turns[played]
        calls = tuple(
            ToolCall(id=call_id or f"replay-{played}-{index}", name=name, arguments=dict(arguments))
            for index, (call_id, name, arguments) in enumerate(turn.tool_calls)
        )
        return ModelTurn(
            text=turn.text,
            tool_calls=calls,
            usage=turn.usage or self._estimate(request, turn.text, calls, played),
            model=self.model,
            stop_reason=turn.stop_reason or ("tool_use" if calls else "end_turn"),
        )

    def _handoff(self, request: Request) -> ModelTurn:
        # The segment ending now opened with "# Handoff: segment N" (none: the first).
        opened = [int(m.group(1)) for msg in request.messages if msg.role == "user"
                  if (m := _HANDOFF_HEADING.match(msg.text))]
        resets_before = opened[-1] - 1 if opened else 0
        if self.handoffs:
            text = self.handoffs[min(resets_before, len(self.handoffs) - 1)]
        else:
            text = ("## Progress and blockers\nThe recording holds no handoff prose; the records above say "
                    "what was done.\n## Next step\nGo on with the recorded turns.")
        return ModelTurn(text=text, usage=self._estimate(request, text, (), 1), model=self.model,
                         stop_reason="end_turn")

    @staticmethod
    def _estimate(request: Request, text: str, calls: tuple[ToolCall, ...], played: int) -> Usage:
        # Counted the way a provider's tokenizer counts: the texts, tool schemas and calls
        # with a small overhead per message, not the JSON around them. After the first
        # call a real provider would serve the stable prefix from its cache.
        cached = _input_estimate(request, request.stable_prefix_end + 1) if played else 0
        written = (
            json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True) if calls else ""
        )
        return Usage(
            input_tokens=_input_estimate(request, len(request.messages)),
            cached_input_tokens=cached,
            output_tokens=estimate_tokens(text + written),
        )


def _input_estimate(request: Request, messages: int) -> int:
    """Estimated input tokens of the system prompt, the tools and the first ``messages``."""
    tools = sum(estimate_tokens(tool_wire(t)) for t in request.tools)
    return (estimate_tokens(request.system) + tools
            + sum(estimate_request_message(m) for m in request.messages[: max(0, messages)]))


def resolve_replay_path(name: str, *, replay_dir: Path | str | None = None) -> Path:
    """The recording ``name`` in the hub's replay folder (symlinks resolved).

    Anything else is refused with the same words whether or not it exists, so a model
    spec cannot be used to probe the hub's file system.
    """
    if not name:
        raise InvalidModelSpec("replay: needs a file name, e.g. replay:demo.json")
    base = Path(replay_dir or DEFAULT_REPLAY_DIR).resolve()
    outside = InvalidModelSpec(f"replay:{name} must name a file in the hub's replay folder, "
                               "e.g. replay:demo-fix-median.json")
    if "\0" in name or Path(name).is_absolute():
        raise outside
    path = (base / name).resolve()
    if not path.is_relative_to(base) or path == base:
        raise outside
    return path


RECORDINGS_LISTED = 50


def recordings(replay_dir: Path | None = None) -> list[str]:
    """The model specs of the recordings in the hub's replay folder (its own files, not
    its subfolders), sorted, at most RECORDINGS_LISTED: what a person may pick."""
    base = Path(replay_dir or DEFAULT_REPLAY_DIR)
    try:
        names = sorted(entry.name for entry in base.iterdir()
                       if entry.suffix in (".json", ".jsonl") and entry.is_file())
    except OSError:
        return []
    return [f"replay:{name}" for name in names[:RECORDINGS_LISTED]]


def load_recording(path: Path) -> tuple[str, tuple[RecordedTurn, ...], tuple[str, ...]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidModelSpec(f"replay file not found: {path.name} is not in the hub's replay folder") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidModelSpec(f"replay file {path} is not readable JSON: {exc}") from None
    model = "replay"
    handoffs: Any = []
    if isinstance(raw, dict):
        model = str(raw.get("model") or model)
        handoffs = raw.get("handoffs", [])
        raw = raw.get("turns")
    if not isinstance(raw, list):
        raise InvalidModelSpec(
            f"replay file {path}: expected a list of turns or an object with 'turns'"
        )
    if not isinstance(handoffs, list) or not all(isinstance(h, str) for h in handoffs):
        raise InvalidModelSpec(f"replay file {path}: 'handoffs' must be a list of texts")
    return model, tuple(_turn(path, index, item) for index, item in enumerate(raw)), tuple(handoffs)


def _turn(path: Path, index: int, item: Any) -> RecordedTurn:
    where = f"replay file {path}, turn {index}"
    if not isinstance(item, dict):
        raise InvalidModelSpec(f"{where}: a turn is an object")
    text = item.get("text", "")
    if not isinstance(text, str):
        raise InvalidModelSpec(f"{where}: 'text' must be a string")
    raw_calls = item.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise InvalidModelSpec(f"{where}: 'tool_calls' must be a list")
    calls = []
    for number, call in enumerate(raw_calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise InvalidModelSpec(f"{where}, call {number}: needs a non-empty 'name'")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise InvalidModelSpec(f"{where}, call {number}: 'arguments' must be an object")
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise InvalidModelSpec(f"{where}, call {number}: 'id' must be a string")
        calls.append((call_id, call["name"], arguments))
    usage = None
    if "usage" in item:
        usage = _usage(where, item["usage"])
    stop_reason = item.get("stop_reason")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise InvalidModelSpec(f"{where}: 'stop_reason' must be a string")
    return RecordedTurn(text=text, tool_calls=tuple(calls), usage=usage, stop_reason=stop_reason)


def _usage(where: str, raw: Any) -> Usage:
    if not isinstance(raw, dict) or not set(raw) <= _USAGE_FIELDS:
        raise InvalidModelSpec(f"{where}: 'usage' takes only {sorted(_USAGE_FIELDS)}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in raw.values()):
        raise InvalidModelSpec(f"{where}: usage counts are non-negative integers")
    return Usage(**raw)
