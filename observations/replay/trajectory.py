"""The neutral trajectory form every reader produces and the replay evaluator consumes.

Plain frozen dataclasses, no Django. One `Trajectory` is one agent run: a system prompt,
a task, then `Step`s (one model call each) holding the `ToolEvent`s that call asked for,
each with the file accesses recognised in it. The JSON form of these classes
(`trajectory_to_json` / `trajectory_from_json`) is also Atrium's own recorded-session
format; `observations.replay.readers.atrium` documents it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

AccessKind = Literal["read", "write", "edit", "list", "search"]
ACCESS_KINDS: tuple[str, ...] = ("read", "write", "edit", "list", "search")

JSON_FORMAT = "atrium-trajectory"
JSON_VERSION = 1


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class FileAccess:
    """One file (or directory) a tool call touched.

    ``path`` is relative to the repository root (``"."`` is the root itself); paths
    outside the repository stay absolute. Lines are 1-based and inclusive:
    ``start=None, end=None`` is the whole file, ``end=None`` alone means "to the end".
    A negative ``start`` with ``end=None`` is a tail read of the last ``-start`` lines
    (``tail -n N``), whose absolute position the recording does not reveal.

    ``content_hash`` is set on reads only: the sha256 of the whole tool output that
    carried the read, so "same range, unchanged content" is decidable from the data.
    Writes, edits, lists and searches say only that the path was touched.
    """

    kind: AccessKind
    path: str
    start: int | None = None
    end: int | None = None
    content_hash: str | None = None

    @property
    def key(self) -> tuple[str, int | None, int | None, str | None]:
        """Equal keys: the same range of the same path, served with the same text."""
        return (self.path, self.start, self.end, self.content_hash)

    @property
    def is_tail(self) -> bool:
        return self.start is not None and self.start < 0

    @property
    def is_whole(self) -> bool:
        return self.start is None and self.end is None

    def overlaps(self, other: FileAccess) -> bool:
        """Whether both accesses touch at least one common line of the same path.

        A tail read overlaps whole-file reads, open-ended ranges and other tails (they
        all include the last line); against a bounded range its position is unknown,
        and unknown is answered "no" so that counts built on it never overstate.
        """
        if self.path != other.path:
            return False
        if self.is_whole or other.is_whole:
            return True
        if self.is_tail or other.is_tail:
            rest = other if self.is_tail else self
            return rest.is_tail or rest.end is None
        lo = max(self.start or 1, other.start or 1)
        hi_self = self.end if self.end is not None else float("inf")
        hi_other = other.end if other.end is not None else float("inf")
        return lo <= min(hi_self, hi_other)

    def describe(self) -> str:
        if self.is_whole:
            return f"{self.kind} {self.path}"
        if self.is_tail:
            return f"{self.kind} {self.path} last {-self.start} lines"  # type: ignore[operator]
        end = "end" if self.end is None else str(self.end)
        return f"{self.kind} {self.path} lines {self.start or 1}-{end}"


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call and its result as the model saw it.

    ``output`` is the exact text the agent put into the conversation for this call
    (wrappers such as mini-swe-agent's ``<returncode>`` or SWE-agent's
    ``OBSERVATION:`` included), unmasked even where the original agent later masked it.
    ``call_in_text`` is True when the call is written inside the step's assistant text
    (mini-swe-agent's bash block, SWE-agent's XML function calls): its arguments are then
    already counted in ``Step.assistant_text`` and must not be counted twice.
    ``exit_code`` is the shell status where the format records one.
    """

    call_id: str
    tool: str
    arguments: dict[str, Any] = field(hash=False)
    output: str
    accesses: tuple[FileAccess, ...] = ()
    exit_code: int | None = None
    call_in_text: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """One model call and what came of it.

    ``notice`` is an environment message that followed the call but is not a tool result
    (a format error such as "Please always provide EXACTLY ONE action", or a rejected
    tool call); such steps usually have no events. ``kept_in_history`` is False when the
    agent dropped this step's answer and notice from every later request (SWE-agent
    re-queries after a format error and keeps only the corrected answer).
    Token counts are the provider's numbers for this call where the format has them:
    ``reported_input_tokens`` includes ``cached_input_tokens``.
    """

    index: int
    assistant_text: str
    events: tuple[ToolEvent, ...] = ()
    reported_input_tokens: int | None = None
    reported_output_tokens: int | None = None
    cached_input_tokens: int | None = None
    notice: str | None = None
    kept_in_history: bool = True


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One recorded agent run in the neutral form.

    ``source`` names the format it was read from ("mini-swe-agent", "swe-agent",
    "openhands", "atrium"); ``path`` is the file it came from (with ``:<line>`` for
    JSON-lines files). ``meta`` carries format-specific facts worth keeping, as plain
    JSON values: ``repo_root`` always; where the format records them the exit status,
    agent version, aggregate ``model_stats``, and ``tools`` (the tool schemas sent with
    every request).
    """

    source: str
    trajectory_id: str
    path: str
    model: str
    system_prompt: str
    task: str
    steps: tuple[Step, ...]
    meta: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def events(self) -> tuple[ToolEvent, ...]:
        return tuple(event for step in self.steps for event in step.events)

    def to_json(self) -> dict[str, Any]:
        """The Atrium recorded-session JSON object (see `readers.atrium`); ``path`` is
        where a trajectory was read from, not part of it, and is not written."""
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "source": self.source,
            "trajectory_id": self.trajectory_id,
            "model": self.model,
            "system_prompt": self.system_prompt,
            "task": self.task,
            "meta": self.meta,
            "steps": [_step_to_json(step) for step in self.steps],
        }

    @classmethod
    def from_json(cls, data: Any, *, path: str = "") -> Trajectory:
        """Inverse of `to_json`; raises `TrajectoryFormatError` naming the bad field."""
        obj = _Fields(data, "trajectory")
        if obj.get("format", str) != JSON_FORMAT:
            raise TrajectoryFormatError(f"format: expected {JSON_FORMAT!r}")
        version = obj.get("version", int)
        if version != JSON_VERSION:
            raise TrajectoryFormatError(
                f"version: {version} is not supported (only {JSON_VERSION})"
            )
        return cls(
            source=obj.get("source", str),
            trajectory_id=obj.get("trajectory_id", str),
            path=path,
            model=obj.get("model", str),
            system_prompt=obj.get("system_prompt", str),
            task=obj.get("task", str),
            steps=tuple(
                _step_from_json(item, f"steps[{i}]")
                for i, item in enumerate(obj.get("steps", list))
            ),
            meta=obj.get("meta", dict, default={}),
        )


class TrajectoryFormatError(ValueError):
    """A file does not have the shape its format promises; the message says where."""


_MISSING: Any = object()


class _Fields:
    """Typed access to one JSON object's fields, with the location in every error."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise TrajectoryFormatError(f"{where}: expected an object, got {type(data).__name__}")
        self.data, self.where = data, where

    def get(self, key: str, kind: type, *, default: Any = _MISSING, nullable: bool = False) -> Any:
        if key not in self.data:
            if default is _MISSING:
                raise TrajectoryFormatError(f"{self.where}.{key}: missing")
            return default
        value = self.data[key]
        if value is None and nullable:
            return None
        # bool is an int subclass; a count or line number must not be True/False.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TrajectoryFormatError(
                f"{self.where}.{key}: expected {kind.__name__}, got {type(value).__name__}"
            )
        return value


def _step_to_json(step: Step) -> dict[str, Any]:
    return {
        "index": step.index,
        "assistant_text": step.assistant_text,
        "reported_input_tokens": step.reported_input_tokens,
        "reported_output_tokens": step.reported_output_tokens,
        "cached_input_tokens": step.cached_input_tokens,
        "notice": step.notice,
        "kept_in_history": step.kept_in_history,
        "events": [
            {
                "call_id": event.call_id,
                "tool": event.tool,
                "arguments": event.arguments,
                "output": event.output,
                "exit_code": event.exit_code,
                "call_in_text": event.call_in_text,
                "accesses": [
                    {
                        "kind": access.kind,
                        "path": access.path,
                        "start": access.start,
                        "end": access.end,
                        "content_hash": access.content_hash,
                    }
                    for access in event.accesses
                ],
            }
            for event in step.events
        ],
    }


def _step_from_json(data: Any, where: str) -> Step:
    obj = _Fields(data, where)
    return Step(
        index=obj.get("index", int),
        assistant_text=obj.get("assistant_text", str),
        events=tuple(
            _event_from_json(item, f"{where}.events[{i}]")
            for i, item in enumerate(obj.get("events", list))
        ),
        reported_input_tokens=obj.get("reported_input_tokens", int, default=None, nullable=True),
        reported_output_tokens=obj.get("reported_output_tokens", int, default=None, nullable=True),
        cached_input_tokens=obj.get("cached_input_tokens", int, default=None, nullable=True),
        notice=obj.get("notice", str, default=None, nullable=True),
        kept_in_history=obj.get("kept_in_history", bool, default=True),
    )


def _event_from_json(data: Any, where: str) -> ToolEvent:
    obj = _Fields(data, where)
    return ToolEvent(
        call_id=obj.get("call_id", str),
        tool=obj.get("tool", str),
        arguments=obj.get("arguments", dict),
        output=obj.get("output", str),
        accesses=tuple(
            _access_from_json(item, f"{where}.accesses[{i}]")
            for i, item in enumerate(obj.get("accesses", list, default=[]))
        ),
        exit_code=obj.get("exit_code", int, default=None, nullable=True),
        call_in_text=obj.get("call_in_text", bool, default=False),
    )


def _access_from_json(data: Any, where: str) -> FileAccess:
    obj = _Fields(data, where)
    kind = obj.get("kind", str)
    if kind not in ACCESS_KINDS:
        raise TrajectoryFormatError(
            f"{where}.kind: {kind!r} is not one of {', '.join(ACCESS_KINDS)}"
        )
    return FileAccess(
        kind=kind,
        path=obj.get("path", str),
        start=obj.get("start", int, default=None, nullable=True),
        end=obj.get("end", int, default=None, nullable=True),
        content_hash=obj.get("content_hash", str, default=None, nullable=True),
    )
