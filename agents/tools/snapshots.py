"""Per-call snapshots of a file's previous content, so a write or edit can be undone."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

# Larger files are still written, but their previous content is not kept.
SNAPSHOT_MAX_BYTES = 10 * 1024 * 1024


def call_key(call_id: str) -> str:
    """A file-name-safe key for a provider call id (ids may contain any characters)."""
    return hashlib.sha256(call_id.encode()).hexdigest()[:32]


def write_atomically(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.atrium-tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Snapshot:
    call_id: str
    path: str  # relative to the worktree
    existed: bool  # False: the call created the file; undo deletes it
    stored: bool  # False: the previous content was too large to keep
    after_sha256: str | None  # the file as the call left it; None: the call deleted it
    before: bytes | None


class SnapshotStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(
        self, *, call_id: str, path: str, existed: bool, before: bytes | None,
        after: bytes | None,
    ) -> bool:
        """Keep the previous content for ``call_id``; return whether it could be kept.

        ``before`` is None for a file too large to keep (or one that did not exist);
        ``after`` is None when the call deleted the file.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        key = call_key(call_id)
        stored = not existed or (before is not None and len(before) <= SNAPSHOT_MAX_BYTES)
        if existed and stored:
            write_atomically(self.directory / f"{key}.before", before or b"")
        meta = {
            "call_id": call_id,
            "path": path,
            "existed": existed,
            "stored": stored,
            "after_sha256": None if after is None else hashlib.sha256(after).hexdigest(),
        }
        # The metadata is written last: it is what makes the snapshot exist.
        write_atomically(self.directory / f"{key}.json", json.dumps(meta).encode())
        return stored

    def load(self, call_id: str) -> Snapshot | None:
        key = call_key(call_id)
        try:
            meta = json.loads((self.directory / f"{key}.json").read_bytes())
        except FileNotFoundError:
            return None
        before = None
        if meta["existed"] and meta["stored"]:
            before = (self.directory / f"{key}.before").read_bytes()
        return Snapshot(
            call_id=meta["call_id"],
            path=meta["path"],
            existed=meta["existed"],
            stored=meta["stored"],
            after_sha256=meta["after_sha256"],
            before=before,
        )
