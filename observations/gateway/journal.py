"""A session's gateway state saved as it grows: a snapshot now and then, a delta per unit.

``dump_state`` is a whole session's state: a few KiB per step, so rewriting it after
every unit costs O(steps) and a long session O(steps²). A ``StateJournal`` remembers
what it last recorded and hands out only what the unit changed: new entries,
observations, payloads, folds, ledger entries and file notes, plus the few old ones
the unit touched. It knows where the context mutates old items without comparing
them all (which would be O(n) again):

- an observation or payload changes when it is consumed (in order, the range
  ``[_consumed_upto before, _consumed_upto now)``), when a fold receipts it (the
  fold's record names it), and at a segment start;
- an entry's text changes only for the intent block and intent updates (a fold
  rewrites them);
- a ledger entry changes when its range is read again or its observation is folded;
- a file note changes when a new observation or payload names its path;
- a segment start replaces every list: the journal then records a snapshot.

``replay(snapshot, deltas)`` gives back exactly ``dump_state`` of the context as of
the last delta (tests/gateway/test_journal.py checks this over hundreds of steps
with folds, intent updates and segment starts). Plain Python: no Django here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from observations.gateway.context import SessionContext
from observations.gateway.state import (
    _SCALARS,
    dump_entry,
    dump_file,
    dump_fold,
    dump_ledger_entry,
    dump_observation,
    dump_payload,
    dump_scalars,
    dump_state,
)

LISTS = ("entries", "observations", "payloads", "ledger", "folds", "files")
# A new snapshot once the deltas since the last one outweigh it: the bytes written
# stay proportional to what changed, and a restore replays at most a snapshot's worth.
MIN_SNAPSHOT_EVERY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Record:
    """What one unit's commit writes: a whole state or a delta against the previous record."""

    snapshot: bool
    data: dict[str, Any]
    size: int  # bytes of ``text``
    text: str  # ``data`` as compact JSON
    seq: int  # the record's position among the session's records, from 1
    # A snapshot written because the deltas since the last one outweighed it: the unit's
    # delta all the same, so that its rows are synced as any unit's (at step 300 syncing
    # every row of the session took about 140 ms of the request).
    changes: dict[str, Any] | None = None

    @property
    def decisions_changed(self) -> bool:
        return self.snapshot or "decisions" in self.data

    @property
    def touched(self) -> dict[str, list[int]] | None:
        """Per list (observations, payloads, ledger, folds, ...): the positions this unit
        added or changed; None for a snapshot the journal could not follow the unit to
        (a new segment, a first record: anything may have changed)."""
        delta = self.changes if self.snapshot else self.data
        if delta is None:
            return None
        touched = {name: [i for i, _ in delta.get("set", {}).get(name, ())] for name in LISTS}
        touched["segment_log"] = [0] if "segment_log" in delta.get("scalars", {}) else []
        return touched


def encode(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class StateJournal:
    def __init__(self) -> None:
        self._primed = False
        self.seq = 0  # of the last record written
        self.snapshot_bytes = 0
        self.since_snapshot = 0  # bytes of the deltas after the last snapshot

    # ------------------------------------------------------------ baseline
    def prime(self, ctx: SessionContext, *, seq: int, snapshot_bytes: int, since_snapshot: int) -> None:
        """``ctx`` is what the stored records up to ``seq`` replay to (a restored
        session): deltas follow it."""
        self._remember_all(ctx)
        self.seq, self.snapshot_bytes, self.since_snapshot = seq, snapshot_bytes, since_snapshot

    def _remember_all(self, ctx: SessionContext) -> None:
        self._primed = True
        self._entries_list = ctx.entries
        self._ledger_obj = ctx.ledger
        ctx.ledger.marked.clear()  # a snapshot holds them all
        ctx.notes.touched.clear()
        self._lens = {name: n for name, n in _lengths(ctx).items()}
        self._pinned = {i: e.text for i, e in enumerate(ctx.entries) if e.kind in ("intent", "intent_update")}
        self._ledger_keys = [entry.range.key for entry in ctx.ledger]
        self._ledger_index = {key: i for i, key in enumerate(self._ledger_keys)}
        self._file_paths = list(ctx.notes.files)
        self._file_index = {path: i for i, path in enumerate(self._file_paths)}
        self._scalars = _scalar_keys(ctx)
        self._decisions = ctx.decisions.to_json()

    # ------------------------------------------------------------ recording
    def record(self, ctx: SessionContext) -> Record:
        """What to write for the unit that just ran; the journal then counts it as written."""
        if not self._primed or ctx.entries is not self._entries_list or ctx.ledger is not self._ledger_obj:
            return self._snapshot(ctx)
        delta = self._delta(ctx)
        if delta is None:  # something moved that the journal cannot follow: start over
            return self._snapshot(ctx)
        text = encode(delta)
        size = len(text.encode())
        if self.since_snapshot + size > max(self.snapshot_bytes, MIN_SNAPSHOT_EVERY_BYTES):
            return self._snapshot(ctx, changes=delta)
        self.since_snapshot += size
        self.seq += 1
        return Record(snapshot=False, data=delta, size=size, text=text, seq=self.seq)

    def _snapshot(self, ctx: SessionContext, changes: dict[str, Any] | None = None) -> Record:
        state = dump_state(ctx)
        text = encode(state)
        self._remember_all(ctx)
        self.snapshot_bytes, self.since_snapshot = len(text.encode()), 0
        self.seq += 1
        return Record(snapshot=True, data=state, size=self.snapshot_bytes, text=text, seq=self.seq, changes=changes)

    def _delta(self, ctx: SessionContext) -> dict[str, Any] | None:
        lens = _lengths(ctx)
        if any(lens[name] < self._lens[name] for name in LISTS):
            return None  # lists only grow within a segment
        old = self._lens
        scalars = dump_scalars(ctx)
        new_obs = ctx.observations[old["observations"]:]
        new_payloads = ctx.payloads[old["payloads"]:]
        new_folds = ctx.folds[old["folds"]:]

        dirty = self._dirty_observations(ctx, new_folds)
        if dirty is None:
            return None
        obs_dirty, pay_dirty, folded_obs = dirty
        entries_dirty = self._dirty_entries(ctx, old, lens)
        ledger_dirty = self._dirty_ledger(ctx, [*new_obs, *folded_obs], old, lens)
        files_dirty = self._dirty_files(ctx, new_obs, new_payloads, old, lens)
        if ledger_dirty is None or files_dirty is None:
            return None

        delta: dict[str, Any] = {"lengths": lens}
        keys = _scalar_keys(ctx, scalars)
        changed = {name: scalars[name] for name in _SCALARS if keys[name] != self._scalars[name]}
        if changed:
            delta["scalars"] = changed
        decisions = ctx.decisions.to_json()
        if decisions != self._decisions:
            delta["decisions"] = decisions
        ledger, notes = ctx.ledger._entries, ctx.notes.files
        parts: dict[str, list[tuple[int, Any]]] = {
            "entries": _items(ctx.entries, entries_dirty, old["entries"], dump_entry),
            "observations": _items(ctx.observations, obs_dirty, old["observations"], dump_observation),
            "payloads": _items(ctx.payloads, pay_dirty, old["payloads"], dump_payload),
            "folds": _items(ctx.folds, set(), old["folds"], dump_fold),
            "ledger": [(i, dump_ledger_entry(ledger[self._ledger_keys[i]]))
                       for i in sorted(ledger_dirty | set(range(old["ledger"], lens["ledger"])))],
            "files": [(i, dump_file(notes[self._file_paths[i]]))
                      for i in sorted(files_dirty | set(range(old["files"], lens["files"])))],
        }
        sets = {name: [[i, item] for i, item in items] for name, items in parts.items()}
        delta["set"] = {name: pairs for name, pairs in sets.items() if pairs}
        self._lens, self._scalars, self._decisions = lens, keys, decisions
        return delta


    def _dirty_observations(self, ctx: SessionContext, new_folds: list) -> tuple[set[int], set[int], list] | None:
        """Observations and payloads: consumed this unit, or receipted by a new fold."""
        obs_dirty = set(range(self._scalars["_consumed_upto"], ctx.book.consumed_upto))
        pay_dirty = set(range(self._scalars["_payloads_consumed_upto"], ctx.book.payloads_consumed_upto))
        folded_obs = [ctx.observation(i) for f in new_folds for i in f.evicted]
        for fold in new_folds:
            obs_dirty.update(i - ctx.obs_base for i in fold.evicted)
            pay_dirty.update(p - ctx.payload_base for p in fold.payloads)
        if any(o is None for o in folded_obs):
            return None
        return obs_dirty, pay_dirty, folded_obs

    def _dirty_entries(self, ctx: SessionContext, old: dict[str, int], lens: dict[str, int]) -> set[int]:
        """The intent block and updates a fold rewrote (new entries are written anyway)."""
        entries_dirty = {i for i, text in self._pinned.items() if ctx.entries[i].text is not text}
        for i in range(old["entries"], lens["entries"]):
            if ctx.entries[i].kind in ("intent", "intent_update"):
                self._pinned[i] = ctx.entries[i].text
        for i in entries_dirty:
            self._pinned[i] = ctx.entries[i].text
        return entries_dirty

    def _dirty_ledger(self, ctx: SessionContext, observations: list, old: dict[str, int],
                      lens: dict[str, int]) -> set[int] | None:
        """Ranges read by new observations (new or served again) or folded out."""
        ledger_dirty: set[int] = set()
        for obs in observations:
            rng = obs.source.read
            entry = ctx.ledger.lookup(rng) if rng is not None else None
            if entry is None:
                continue
            index = self._ledger_index.get(rng.key)
            if index is None:
                index = self._ledger_index[rng.key] = len(self._ledger_keys)
                self._ledger_keys.append(rng.key)
            ledger_dirty.add(index)
        for key in ctx.ledger.marked:  # marked stale by a write (ReadLedger.file_changed)
            if (index := self._ledger_index.get(key)) is not None:
                ledger_dirty.add(index)
        ctx.ledger.marked.clear()
        # New ranges enter the ledger's dict in the order their observations came.
        ledger_new = list(islice(reversed(ctx.ledger._entries), lens["ledger"] - old["ledger"]))[::-1]
        if len(self._ledger_keys) != lens["ledger"] or ledger_new != self._ledger_keys[old["ledger"]:]:
            return None
        return ledger_dirty

    def _dirty_files(self, ctx: SessionContext, new_obs: list, new_payloads: list, old: dict[str, int],
                     lens: dict[str, int]) -> set[int] | None:
        """File notes: paths named by new observations and payloads."""
        paths = {p for o in new_obs for p in _paths(o)} | {p.spec.path for p in new_payloads if p.spec.path}
        paths |= ctx.notes.touched
        ctx.notes.touched.clear()
        new_paths = list(islice(reversed(ctx.notes.files), lens["files"] - old["files"]))[::-1]
        for path in new_paths:
            self._file_index[path] = len(self._file_paths)
            self._file_paths.append(path)
        if len(self._file_paths) != lens["files"] or any(p not in self._file_index for p in paths if p in ctx.notes.files):
            return None
        return {self._file_index[p] for p in paths if p in ctx.notes.files}


def _lengths(ctx: SessionContext) -> dict[str, int]:
    return {"entries": len(ctx.entries), "observations": len(ctx.observations), "payloads": len(ctx.payloads),
            "ledger": len(ctx.ledger), "folds": len(ctx.folds), "files": len(ctx.notes.files)}


def _scalar_keys(ctx: SessionContext, scalars: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Values to compare with the next unit's: copies of lists (``segment_log`` grows
    in place and its newest record is filled in later, so its length and last record)."""
    scalars = scalars if scalars is not None else dump_scalars(ctx)
    keys = {}
    for name, value in scalars.items():
        if name == "segment_log":
            keys[name] = (len(value), encode(value[-1]) if value else "")
        elif isinstance(value, (list, dict)):
            keys[name] = copy.deepcopy(value)
        else:
            keys[name] = value
    return keys


def _paths(obs) -> list[str]:
    src = obs.source
    return ([src.read.path] if src.read is not None else []) + list(src.written)


def _items(items: list, dirty: set[int], old_len: int, dump: Callable[[Any], dict]) -> list[tuple[int, dict]]:
    indexes = sorted(i for i in dirty if 0 <= i < old_len) + list(range(old_len, len(items)))
    return [(i, dump(items[i])) for i in indexes]


# ------------------------------------------------------------ reading back
def replay(snapshot: Mapping[str, Any], deltas: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The state as of the last delta: ``snapshot`` with each delta applied in order."""
    state = copy.deepcopy(dict(snapshot))
    for delta in deltas:
        apply_delta(state, delta)
    return state


def apply_delta(state: dict[str, Any], delta: Mapping[str, Any]) -> None:
    for name, n in delta["lengths"].items():
        items = state[name]
        del items[n:]
        items.extend([None] * (n - len(items)))
    for name, pairs in delta.get("set", {}).items():
        items = state[name]
        for i, item in pairs:
            items[i] = item
    if "scalars" in delta:
        state["scalars"] = {**state["scalars"], **delta["scalars"]}
    if "decisions" in delta:
        state["decisions"] = delta["decisions"]
