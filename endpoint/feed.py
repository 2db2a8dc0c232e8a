"""A stateless client's request, taken into its gateway session, and the one upstream
exchange it makes: the decision logic of the proxied sessions, plain Python over a
SessionContext, no Django (``endpoint/sessions.py`` does the database work).

``take`` feeds the session what the request adds (``conversation.continuation``): the
client's user messages as user entries, its assistant turns as the agent's, its tool
results as observations whose purpose is the call (name and arguments) and, for a read
whose arguments name a path and lines or a shell line that reads one file
(``shell_calls``), the range the ledger compares. A history the
client edited or compacted starts a new segment (``segments.restart_segment``) filled
with the history as it now is, so the upstream never gets half of one and half of the
other.

``Exchange`` sends the request the gateway prepares through the turn driver the step
loop uses too (observations/gateway/turn.py): a new segment first when one is due, and
one folded retry after an overflow; a second overflow is the client's to hear.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.providers import CallRecord, Completion, ProviderError
from agents.providers.base import DeltaSink
from agents.providers.output_limits import output_limit
from endpoint.conversation import continuation
from endpoint.shell_calls import shell_command, shell_effects
from endpoint.shell_changes import shell_changes
from observations.gateway import segments
from observations.gateway.context import Boundary, SessionContext
from observations.gateway.messages import NO_PARAMS, Message, Params, Request, ToolCall
from observations.gateway.receipts import call_purpose, meaningful_first_line
from observations.gateway.segments import HistoryItem
from observations.gateway.state import dump_fold
from observations.gateway.tokens import estimate_tokens
from observations.gateway.transcript import FileRange, Observation, ObservationInput
from observations.gateway.turn import TurnDriver, Usage
from observations.replay.actions import PathScope, editor_accesses
from sessions.runtime.file_changes import WRITTEN
from sessions.runtime.segments import SegmentStarter

# Tools of agents nobody here wrote: a read by name, a write by name, the path and the
# lines by the argument names such tools use.
_READS = re.compile(r"read|view|open|cat|show", re.IGNORECASE)
_WRITES = re.compile(r"write|edit|create|replace|patch|insert", re.IGNORECASE)
PATH_ARGUMENTS = ("path", "file_path", "filepath", "file", "filename")
START_ARGUMENTS = ("start_line", "line_start", "start", "from_line", "offset")
END_ARGUMENTS = ("end_line", "line_end", "end", "to_line")
# The file-editor convention (SWE-agent's and OpenHands' ``str_replace_editor``,
# Anthropic's text editor tool): one tool whose ``command`` argument says what the call
# did, so its name says nothing ("str_replace_editor" reads as a write by name).
EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "edit"})
_AS_GIVEN = PathScope("/")


@dataclass(frozen=True)
class Taken:
    fed: int  # messages fed to the session
    diverged_at: int | None  # where the client's history changed, when it did
    observations: tuple[int, ...]  # obs_ids of the tool results fed
    closed: tuple[int, list[HistoryItem]] | None = None  # the segment the change ended, for history_search


def take(ctx: SessionContext, known: Sequence[str], request: Request, digests: Sequence[str] | None = None) -> Taken:
    """Feed ``ctx`` what ``request`` adds to the history whose digests are ``known``
    (``digests``: the request's own, where already made)."""
    step = continuation(known, request, digests)
    messages: Sequence[Message] = step.new
    closed = None
    if step.diverged:
        closed = (ctx.segment, segments.closing_history(ctx))
        segments.restart_segment(ctx, reason=f"the client changed its history at message {step.diverged_at}")
        messages = request.messages
    observations = feed(ctx, messages)
    return Taken(fed=len(messages), diverged_at=step.diverged_at, observations=observations, closed=closed)


def feed(ctx: SessionContext, messages: Sequence[Message]) -> tuple[int, ...]:
    calls = {call.id: call for entry in ctx.entries if entry.kind == "assistant" for call in entry.tool_calls}
    observations = []
    for message in messages:
        if message.role == "assistant":
            ctx.add_assistant(message.text, message.tool_calls, thinking=message.thinking)
            calls.update((call.id, call) for call in message.tool_calls)
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            call = calls.get(call_id) or ToolCall(call_id, message.tool_name or "tool", {})
            earlier = calls_before(list(calls.values()), call_id)
            observations.append(ctx.add_tool_result(observation_input(call, message.text, earlier)).obs_id)
        else:
            ctx.add_user(message.text, kind="user")
    return tuple(observations)


def calls_before(calls: list[ToolCall], call_id: str) -> list[ToolCall]:
    """The calls made before ``call_id`` (in the order made; a call of the same turn
    listed after it, run beside it, is not before it)."""
    ids = [call.id for call in calls]
    return calls[:ids.index(call_id)] if call_id in ids else calls


def observation_input(call: ToolCall, text: str, earlier: Sequence[ToolCall] = ()) -> ObservationInput:
    """A client's tool result as the gateway's observation: what it was for (the call),
    and the file range it read or the paths it wrote where the arguments show them
    (``earlier``: the session's calls before it, where a script it ran was written)."""
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    data = text.encode("utf-8", "surrogatepass")
    sha = hashlib.sha256(data).hexdigest()
    path = next((v for k in PATH_ARGUMENTS if isinstance(v := arguments.get(k), str) and v), None)
    failed = text.lstrip().lower().startswith(("error", "traceback"))
    read = None
    written: tuple[str, ...] = ()
    if path and arguments.get("command") in EDITOR_COMMANDS:
        read, written = _editor_call(path, arguments, text, sha, failed=failed)
    elif path and not failed and _WRITES.search(call.name):
        written = (path,)
    elif path and not failed and _READS.search(call.name):
        start, end = line_range(arguments)
        read = FileRange(path, start, end, sha)
    elif path is None and not failed:
        read, written = shell_effects(call, text, sha)
        also = tuple(path for path, kind in shell_changes(call, text, earlier) if kind == WRITTEN)  # scripts' writes
        written = tuple(dict.fromkeys(written + also))
    return ObservationInput(
        call_id=call.id, tool=call.name, arguments=arguments, text=text, sha256=sha, size=len(data),
        tokens=estimate_tokens(text), purpose=call_purpose(call.name, call.arguments), read=read,
        first_line=meaningful_first_line(text), written=written,
    )


def _editor_call(path: str, arguments: dict[str, Any], text: str, sha: str, *,
                 failed: bool) -> tuple[FileRange | None, tuple[str, ...]]:
    """An editor call's read or write, recognised as the replay evaluator recognises it
    (``editor_accesses``: a directory listing, a refused or abbreviated view is no read; a
    clipped view is read up to its last whole line), under the path the client gave. An
    edit the editor refused (``ERROR: No replacement was performed``) wrote nothing."""
    accesses = editor_accesses(arguments, scope=_AS_GIVEN, output=text, cwd="/")
    read = next((FileRange(path, a.start, a.end, sha) for a in accesses if a.kind == "read"), None)
    written = (path,) if not failed and any(a.kind in ("write", "edit") for a in accesses) else ()
    return read, written


def line_range(arguments: dict[str, Any]) -> tuple[int | None, int | None]:
    """1-based inclusive lines a read's arguments name: ``start``/``end`` by their usual
    names, ``view_range`` ([start, end], -1 for the end), or ``offset`` and ``limit``."""
    view = arguments.get("view_range")
    if isinstance(view, list) and len(view) == 2 and all(_int(v) is not None for v in view):
        start, end = _int(view[0]), _int(view[1])
        return start, None if end is not None and end < 0 else end
    start = next((n for k in START_ARGUMENTS if (n := _int(arguments.get(k))) is not None), None)
    end = next((n for k in END_ARGUMENTS if (n := _int(arguments.get(k))) is not None), None)
    limit = _int(arguments.get("limit"))
    if end is None and limit is not None and limit > 0:
        end = (start or 1) + limit - 1
    return start, end


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def output_reserved(asked: int, *, model: str, window: int, budget: int) -> int:
    """What a session's step reserves of the window for the reply, and asks the upstream
    for: the client's ``max_tokens`` (Claude Code asks 32,000 to 64,000) up to the
    model's own limit and half the window (the rest is the conversation's); without
    one, the agent's output budget."""
    if asked <= 0:
        return budget
    return max(1, min(asked, output_limit(model) or asked, window // 2))


class Host(Protocol):
    def call_model(self, request: Request, on_delta: DeltaSink | None = None) -> Completion: ...
    def emit(self, kind: str, payload: dict[str, Any]) -> None: ...


@dataclass
class Exchange:
    """One upstream exchange for the session ``ctx``. ``records`` holds every call it
    made (a handoff's prose and a refused overflow included), for the accounting,
    whether it ended in a turn or raised."""

    ctx: SessionContext
    host: Host
    max_tokens: int = 0  # the client's own output limit; 0: what the session's budget reserves
    params: Params = NO_PARAMS  # the client's settings (endpoint.params), for the step's calls only
    person_waiting: bool = False
    on_delta: DeltaSink | None = None  # the turn streamed to the client as it comes
    records: list[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The segment it closed, if it did, is taken from here when the unit commits.
        self.segments = SegmentStarter(self.ctx, self.host)

    def run(self) -> Completion:
        """The turn; raises ContextTooLarge when no request fits, the provider's
        ContextOverflow after the one folded retry, and its other errors as they are."""

        def send(boundary: Boundary) -> tuple[Completion, Usage | None]:
            try:
                completion = self.host.call_model(self._request(boundary), self.on_delta)
            except ProviderError as exc:
                if exc.record is not None:
                    self.records.append(exc.record)
                raise
            self.records.append(completion.record)
            return completion, completion.record.usage

        def overflowed(boundary: Boundary, _exc: Exception) -> None:
            self.host.emit("model.overflow", {"step": self.ctx.step, "projection": boundary.projection})

        return TurnDriver(self.ctx, send, lambda reason: self.segments.start(reason, self.records),
                          on_boundary=self._emit_fold, on_overflow=overflowed, person_waiting=self.person_waiting,
                          second_overflow_raises=True).run()

    def _request(self, boundary: Boundary) -> Request:
        """The step's request with the client's settings. Its output limit is at most what
        the session's budget reserves of the window (``output_reserved``: a larger one
        could overflow a request the projection let through). A handoff's prose
        (``segments``) is the gateway's, sent without them."""
        limit = min((n for n in (self.max_tokens, boundary.request.max_tokens) if n), default=0)
        return dataclasses.replace(boundary.request, max_tokens=limit, params=self.params)

    def _emit_fold(self, boundary: Boundary) -> None:
        if (fold := boundary.fold) is not None:
            self.host.emit("fold", dump_fold(fold))


def changed_by(ctx: SessionContext, obs: Observation) -> list[dict[str, Any]]:
    """``inferred_changes`` of a result fed at ``ctx``'s step; the ranges of those files
    read before it are stale in the ledger (not one the same call read: it read after
    its write, as in ``sed -i … f && cat f``)."""
    calls = [call for entry in ctx.entries if entry.kind == "assistant" for call in entry.tool_calls]
    changes = inferred_changes(obs, ctx.step, calls_before(calls, obs.call_id))
    read_here = {obs.source.read.path} if obs.source.read is not None else set()
    ctx.ledger.file_changed({change["path"] for change in changes} - read_here, ctx.step)
    return changes


def inferred_changes(obs: Observation, step: int, earlier: Sequence[ToolCall] = ()) -> list[dict[str, Any]]:
    """The session's change records (``file.changed`` payloads) of a client's tool result:
    the client ran the tool, so what it wrote, removed or put back is known only from
    the call itself (``shell_changes``; a file tool's write by its arguments), and the
    records say so. A write's path may have been there before or not."""
    call = ToolCall(obs.call_id, obs.source.tool, obs.source.arguments)
    changes = shell_changes(call, obs.source.text, earlier) if shell_command(call) is not None \
        else tuple((path, WRITTEN) for path in obs.source.written)
    return [{"step": step, "call_id": obs.call_id, "path": path, "kind": kind, "sha256": "", "old_path": "",
             "inferred": True} for path, kind in changes]
