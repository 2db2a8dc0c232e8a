"""Neutral requests shared by the provider tests."""

from __future__ import annotations

from observations.gateway.messages import Message, Request, ToolCall, ToolSchema

READ_FILE = ToolSchema(
    name="read_file",
    description="Read a file of the worktree, optionally a line range.",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "start": {"type": "integer"},
            "end": {"type": "integer"},
        },
        "required": ["path"],
    },
)
LIST_FILES = ToolSchema(
    name="list_files",
    description="List the files of the worktree.",
    parameters={"type": "object", "properties": {}},
)


def session_request(
    *, stable_prefix_end: int = 0, reuse_prefix_end: int = -1, max_tokens: int = 4096
) -> Request:
    """A mid-session request: intent, a step with two tool calls and their results, a steer."""
    return Request(
        model="any",
        system="You are a careful coding agent.",
        tools=(READ_FILE, LIST_FILES),
        messages=(
            Message(
                "user", "Objective: make tests/test_calc.py pass. Constraint: don't touch vendor/."
            ),
            Message(
                "assistant",
                "Reading the test and listing files.",
                tool_calls=(
                    ToolCall("call_a", "read_file", {"path": "tests/test_calc.py"}),
                    ToolCall("call_b", "list_files", {}),
                ),
            ),
            Message(
                "tool",
                "def test_add():\n    assert add(2, 2) == 4\n",
                tool_call_id="call_a",
                tool_name="read_file",
            ),
            Message(
                "tool",
                "calc.py\ntests/test_calc.py\n",
                tool_call_id="call_b",
                tool_name="list_files",
            ),
            Message("user", "Steer: keep the fix minimal."),
        ),
        max_tokens=max_tokens,
        stable_prefix_end=stable_prefix_end,
        reuse_prefix_end=reuse_prefix_end,
    )


def first_request() -> Request:
    return Request(
        model="any",
        system="You are a careful coding agent.",
        tools=(READ_FILE,),
        messages=(Message("user", "Objective: make tests pass."),),
        max_tokens=1024,
    )


def reordered_pair() -> tuple[Request, Request]:
    """The same turn twice, its tool-call arguments' keys (nested ones too) in another
    order: a session as sent, and as it comes back from jsonb storage on resume."""
    as_sent = {
        "path": "src/app.py",
        "edits": [{"old": "a - b", "new": "a + b", "at": {"line": 2, "column": 11}}],
        "dry_run": False,
    }
    as_stored = {
        "dry_run": False,
        "edits": [{"at": {"column": 11, "line": 2}, "new": "a + b", "old": "a - b"}],
        "path": "src/app.py",
    }

    def request(arguments: dict) -> Request:
        return Request(
            model="any",
            system="You are a careful coding agent.",
            tools=(READ_FILE,),
            messages=(
                Message("user", "Fix the sign in add."),
                Message("assistant", "", tool_calls=(ToolCall("c1", "edit_file", arguments),)),
                Message("tool", "Edited src/app.py.", tool_call_id="c1", tool_name="edit_file"),
            ),
            max_tokens=256,
        )

    return request(as_sent), request(as_stored)
