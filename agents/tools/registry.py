"""Every tool an agent can call, once: its arguments, what models are told, and its traits.

The JSON schemas sent to models and the argument checking (agents.tools.schemas), the
box's replay rules (agents.tools.box), the approval defaults (sessions.runtime.approvals),
the step loop's bookkeeping (sessions.runtime.loop), the analysis and the export all read
these entries; a tool added here is known everywhere, and a trait changed here changes
everywhere. The box holds one executor per entry (a test checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from observations.gateway.messages import ToolSchema

ArgType = Literal["string", "integer", "number", "boolean", "array"]
AccessKind = Literal["read", "write", "edit", "list", "search"]


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument. Constraints past the type stay out of the schema (every byte of it
    is sent with every request) and are enforced by the checking instead."""

    name: str
    type: ArgType
    required: bool = False
    default: Any = None  # the value when absent (None: "not given")
    minimum: float | None = None
    non_blank: bool = False  # not empty nor only whitespace
    non_empty: bool = False  # whitespace is a legitimate value, nothing is not
    no_nul: bool = False  # a command line is C strings: bash never sees what follows a NUL

    def schema(self) -> dict[str, Any]:
        if self.type == "array":
            return {"type": "array", "items": {"type": "string"}}
        return {"type": self.type}


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    arguments: tuple[Arg, ...] = ()
    # Approvals: runs without asking when no room rule says otherwise.
    read_only: bool = False
    # The box: after a crash mid-call it is simply run again (no side effect to repeat).
    side_effect_free: bool = False
    # Takes a worktree `path`: path rules apply, and the box records the resolved path.
    path_argument: bool = False
    # Runs a shell line (`command`): command rules apply, the loop reads its exit code.
    shell: bool = False
    # Changes files in the worktree.
    writes: bool = False
    # Its result is a line range of something, served through the session's ledger.
    reads_range: bool = False
    # Parks the session until jobs end or time passes.
    waits: bool = False
    # A reviewer's verdict: ends a review round (sessions/runtime/reviews.py). Only reviewer
    # sessions have it; no other session's tool table shows it.
    verdict: bool = False
    # What it does to the file at `path`, for exported trajectories (reads carry a range).
    access: AccessKind | None = None
    args_by_name: Mapping[str, Arg] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "args_by_name", {arg.name: arg for arg in self.arguments})

    @property
    def schema(self) -> ToolSchema:
        parameters: dict[str, Any] = {"type": "object",
                                      "properties": {arg.name: arg.schema() for arg in self.arguments}}
        required = [arg.name for arg in self.arguments if arg.required]
        if required:
            parameters["required"] = required
        return ToolSchema(self.name, self.description, parameters)

    @property
    def defaults(self) -> dict[str, Any]:
        return {arg.name: arg.default for arg in self.arguments if not arg.required}


def _path(*, required: bool = True) -> Arg:
    return Arg("path", "string", required=required, non_blank=required, default=None if required else ".")


TOOLS: tuple[Tool, ...] = (
    Tool("read_file",
         "Read a text file with line numbers; start/end: 1-based inclusive lines "
         "(max 2000 lines or 100 KB per call).",
         (_path(), Arg("start", "integer", default=1, minimum=1), Arg("end", "integer", minimum=1)),
         read_only=True, side_effect_free=True, path_argument=True, reads_range=True, access="read"),
    Tool("list_files",
         "List files under a directory (default: worktree root); pattern: glob, e.g. *.py.",
         (_path(required=False), Arg("pattern", "string")),
         read_only=True, side_effect_free=True, path_argument=True, access="list"),
    Tool("search",
         "Grep file contents for a Python regex; glob filters files, e.g. *.py.",
         (Arg("pattern", "string", required=True, non_blank=True), _path(required=False), Arg("glob", "string")),
         read_only=True, side_effect_free=True, path_argument=True, access="search"),
    Tool("write_file",
         "Create or overwrite a file with content.",
         (_path(), Arg("content", "string", required=True)),
         path_argument=True, writes=True, access="write"),
    Tool("edit_file",
         "Replace exact text old with new; old must match once unless replace_all.",
         (_path(), Arg("old", "string", required=True, non_empty=True), Arg("new", "string", required=True),
          Arg("replace_all", "boolean", default=False)),
         path_argument=True, writes=True, access="edit"),
    Tool("undo_edit",
         "Restore a file to how it was before write_file/edit_file call call_id.",
         (Arg("call_id", "string", required=True, non_blank=True),),
         writes=True, access="edit"),
    Tool("shell",
         "Run a bash command in the worktree. A long one continues as a job (you get its "
         "handle; collect it with await). timeout: kill after N s.",
         (Arg("command", "string", required=True, non_blank=True, no_nul=True),
          Arg("timeout", "number", minimum=0.001)),
         shell=True),
    Tool("await",
         "Wait for jobs (default: all unfinished) or seconds; returns early if a person "
         "writes. stop: end the jobs instead.",
         (Arg("handles", "array"), Arg("seconds", "number", minimum=0), Arg("stop", "boolean", default=False)),
         read_only=True, side_effect_free=True, waits=True),
    Tool("post_message",
         "Post a message to the room chat; @name reaches that agent or person.",
         (Arg("text", "string", required=True, non_blank=True),),
         read_only=True),
    # Re-running it after a crash is harmless: its notes remember the call (agents/tools/room.py).
    Tool("room_status",
         "The room's open tasks, other sessions and their changed files, merges into main "
         "since you began; later calls: only changes.",
         read_only=True, side_effect_free=True),
    # recall and history_search read only what this session itself received or wrote.
    Tool("recall",
         "Exact text of a result you received or a body you wrote, by the ref a receipt or "
         "handoff shows; start_line/end_line: part of it.",
         (Arg("ref", "string", required=True, non_blank=True), Arg("start_line", "integer", minimum=1),
          Arg("end_line", "integer", minimum=1)),
         read_only=True, side_effect_free=True, reads_range=True),
    Tool("history_search",
         "Search this session's earlier segments (messages, calls, results); hits carry refs.",
         (Arg("query", "string", required=True, non_blank=True), Arg("limit", "integer", default=10, minimum=1)),
         read_only=True, side_effect_free=True),
)

# Review before merge: a reviewer session's whole tool table. Read-only: nothing it can
# call changes the author's worktree or runs a command.
REVIEW_TOOLS_TABLE: tuple[Tool, ...] = (
    Tool("review",
         "End this review round: decision approve or request_changes, with reasons the author can act on.",
         (Arg("decision", "string", required=True, non_blank=True),
          Arg("reasons", "string", required=True, non_blank=True)),
         read_only=True, verdict=True),
)
TOOLS += REVIEW_TOOLS_TABLE

BY_NAME: Mapping[str, Tool] = {tool.name: tool for tool in TOOLS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def names_where(**traits: Any) -> frozenset[str]:
    """The tools whose traits all have the given values, e.g. ``names_where(writes=True)``."""
    return frozenset(t.name for t in TOOLS if all(getattr(t, k) == v for k, v in traits.items()))


READ_ONLY = names_where(read_only=True)
SIDE_EFFECT_FREE = names_where(side_effect_free=True)
PATH_TOOLS = names_where(path_argument=True)
SHELL_TOOLS = names_where(shell=True)
WRITING = names_where(writes=True)
RANGE_TOOLS = names_where(reads_range=True)
WAITS = names_where(waits=True)
VERDICTS = names_where(verdict=True)
# Every session's tools unless its profile narrows them; a reviewer's instead.
WORK_TOOLS = tuple(name for name in NAMES if name not in VERDICTS)
REVIEW_TOOLS = ("read_file", "list_files", "search", "recall", *sorted(VERDICTS))
