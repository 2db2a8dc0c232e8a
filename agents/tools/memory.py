"""`recall` and `history_search`: the agent's way back to what left its context.

Both read the session's own records (``SessionMemory``, backed by the database): a
session can recall only what it received or wrote itself, whatever the room's shared
store holds, and searches only its own earlier segments.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Protocol

from .outcome import Result, ToolError

REF = re.compile(r"[0-9a-f]{6,64}")
MAX_LINES = 2_000
MAX_BYTES = 100_000


@dataclass(frozen=True, slots=True)
class Recalled:
    sha256: str
    text: str
    label: str  # what it was: "shell: pytest -q (step 12)"


@dataclass(frozen=True, slots=True)
class Hit:
    segment: int
    step: int
    label: str  # "result of shell: pytest -q", "your message", "steer from alice"
    ref: str  # "" when there is nothing to recall (a message is quoted whole)
    snippet: str


class AmbiguousRef(ToolError):
    """Several of the session's texts start with the ref given."""


class SessionMemory(Protocol):
    def recall(self, ref: str) -> Recalled | None: ...
    def search(self, query: str, limit: int) -> tuple[int, list[Hit]]: ...  # (earlier segments, hits)


def recall(memory: SessionMemory, *, ref: str, start_line: int | None, end_line: int | None) -> Result:
    ref = ref.strip().strip('"').lower()
    if not REF.fullmatch(ref):
        raise ToolError(f'recall: {ref!r} is not a ref; use the 12 hex digits a receipt shows, e.g. recall("3f2a9c1b7d4e")')
    found = memory.recall(ref)
    if found is None:
        raise ToolError(
            f"recall: this session received nothing with ref {ref}. A session recalls only what it "
            "received or wrote itself (the refs its receipts and handoffs show)."
        )
    lines = found.text.splitlines(keepends=True)
    total = len(lines)
    if start_line is not None and start_line > max(total, 1):
        raise ToolError(f"recall: start_line {start_line} is past the end ({total} lines)")
    first = start_line or 1
    last = min(end_line or total, total, first + MAX_LINES - 1)
    if end_line is not None and end_line < first:
        raise ToolError(f"recall: end_line {end_line} is before start_line {first}")
    chosen = lines[first - 1 : last]
    while len(chosen) > 1 and sum(len(line.encode()) for line in chosen) > MAX_BYTES:
        chosen = chosen[: len(chosen) // 2]
    last = first + len(chosen) - 1
    served = "".join(chosen)
    cut = ""
    if len(served.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        # One line longer than a result may be (minified code, a data dump): its start.
        size = len(served.encode("utf-8", "surrogatepass"))
        served = served.encode("utf-8", "surrogatepass")[:MAX_BYTES].decode("utf-8", "ignore")
        cut = f"; line {first} is {size:,} bytes, cut at {MAX_BYTES:,}"
    whole = first == 1 and last >= total and not cut
    short = found.sha256[:12]
    if whole:
        text = served  # the exact bytes
    else:
        more = f"; recall(\"{short}\", start_line={last + 1}) for the rest" if last < total else ""
        text = f"[recall {short}: lines {first}-{last} of {total}{cut}{more}]\n{served}"
    return Result(
        text=text,
        purpose=f"recall {short} ({found.label})" + ("" if whole else f" lines {first}-{last}"),
        path=f"recall:{short}",
        line_start=None if whole else first,
        line_end=None if whole else last,
        range_sha256=hashlib.sha256(served.encode("utf-8", "surrogatepass")).hexdigest(),
    )


def history_search(memory: SessionMemory, *, query: str, limit: int) -> Result:
    earlier, hits = memory.search(query.strip(), min(limit, 50))
    purpose = f"history_search {query.strip()[:60]!r}"
    if not earlier:
        return Result(text="This session has no earlier segments yet: everything it did is still above.",
                      purpose=purpose)
    if not hits:
        return Result(text=f"No match for {query.strip()!r} in the {earlier} earlier segment(s).", purpose=purpose)
    lines = [f"{len(hits)} match(es) in the {earlier} earlier segment(s):"]
    for hit in hits:
        where = f'; recall("{hit.ref}")' if hit.ref else ""
        lines.append(f"- segment {hit.segment}, step {hit.step}, {hit.label}{where}: {hit.snippet}")
    return Result(text="\n".join(lines), purpose=purpose)
