"""Call records: a tool call runs at most once per call id, across crashes and processes.

``<key>.started`` is written before a call runs and ``<key>.json``, the
outcome, atomically after it. An outcome present: the call is settled, serve it. Only
the start marker present: the process died mid-call, and what it did is unknown.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .outcome import ToolOutcome
from .snapshots import call_key, write_atomically


class CallRecords:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, call_id: str, suffix: str) -> Path:
        return self.directory / f"{call_key(call_id)}{suffix}"

    def outcome(self, call_id: str) -> ToolOutcome | None:
        try:
            data = json.loads(self._path(call_id, ".json").read_bytes())
        except FileNotFoundError:
            return None
        return ToolOutcome.from_dict(data)

    def started(self, call_id: str) -> bool:
        return self._path(call_id, ".started").exists()

    def begin(self, call_id: str, tool: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        marker = self._path(call_id, ".started")
        body = json.dumps({"call_id": call_id, "tool": tool, "at": time.time(),
                           "pid": os.getpid()}).encode()
        write_atomically(marker, body)

    def withdraw(self, call_id: str) -> None:
        """Take back the start marker of a call that changed nothing (agents.tools.outcome.NotRun)."""
        self._path(call_id, ".started").unlink(missing_ok=True)

    def finish(self, outcome: ToolOutcome) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        body = json.dumps(outcome.to_dict(), ensure_ascii=False).encode()
        write_atomically(self._path(outcome.call_id, ".json"), body)
