"""The read ledger: per session, which file ranges the model has received and whether
each is still in the request being assembled. Never shared across sessions."""

from __future__ import annotations

from dataclasses import dataclass

from observations.gateway.transcript import FileRange

RangeKey = tuple[str, int | None, int | None, str]


@dataclass(slots=True)
class LedgerEntry:
    range: FileRange
    obs_id: int  # the observation that last served this range whole
    received_step: int
    in_context: bool = True
    evicted_by_fold: int | None = None
    times_served: int = 1
    # The step at which a write changed its file after the range was received: what the
    # model holds of it is stale (None: as far as the hub knows, it is not).
    changed_step: int | None = None


class ReadLedger:
    def __init__(self) -> None:
        self._entries: dict[RangeKey, LedgerEntry] = {}
        self._by_obs: dict[int, RangeKey] = {}
        self.marked: set[RangeKey] = set()  # entries marked stale since the state was last recorded

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries.values())

    def lookup(self, rng: FileRange) -> LedgerEntry | None:
        return self._entries.get(rng.key)

    def received(self, rng: FileRange, obs_id: int, step: int) -> LedgerEntry:
        """The model got this range whole in observation ``obs_id``."""
        entry = self._entries.get(rng.key)
        if entry is None:
            entry = self._entries[rng.key] = LedgerEntry(rng, obs_id, step)
        else:
            self._by_obs.pop(entry.obs_id, None)
            entry.obs_id, entry.received_step = obs_id, step
            entry.in_context, entry.evicted_by_fold, entry.changed_step = True, None, None
            entry.times_served += 1
        self._by_obs[obs_id] = rng.key
        return entry

    def file_changed(self, paths: set[str], step: int) -> None:
        """Files changed at ``step`` (by a command, a tool, a job): every range read of
        them before is stale."""
        for key, entry in self._entries.items():
            if entry.range.path in paths and entry.changed_step is None and entry.received_step <= step:
                entry.changed_step = step
                self.marked.add(key)

    def restore(self, entry: LedgerEntry) -> None:
        self._entries[entry.range.key] = entry
        self._by_obs[entry.obs_id] = entry.range.key

    def evicted(self, obs_ids: list[int], fold: int) -> list[FileRange]:
        """A fold removed these observations: their ranges left the context."""
        left = []
        for obs_id in obs_ids:
            key = self._by_obs.get(obs_id)
            if key is None:
                continue
            entry = self._entries[key]
            entry.in_context, entry.evicted_by_fold = False, fold
            left.append(entry.range)
        return left
