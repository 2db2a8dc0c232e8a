"""The deadlock counter: re-reads of text a policy had taken out, and denied re-reads.

Judged on the recorded file accesses, independently of the gateway's own ledger (which
only knows exact ranges): a read is a *re-read after eviction* when an earlier read of
the same path overlaps it with unchanged content (no recorded write or edit of the path
in between, or the same content hash) and that earlier text had been replaced by a
receipt or stub at that moment, while no earlier read still in the request covers the
range. It is a *denied re-read* when the policy's answer to it is again not the text
(the room-wide "already read" rule, or a note pointing at text that is gone): the
loop an agent cannot get out of.

The fidelity proxy counts what a policy took out that the recorded agent needed again
afterwards: the newest result of a range it read again (unchanged), the newest read of
a path it then wrote or edited, or the newest result holding a line (40 characters or
more, half of them letters or digits) that a later action quotes while no result in
the request holds it. Each result counts once, with its tokens and how many steps after
it left the request (a fold, a stub, a new segment) it was needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from observations.gateway.transcript import Observation, ObsState
from observations.replay.trajectory import FileAccess


@dataclass(slots=True)
class _Read:
    access: FileAccess
    observation: Observation
    version: int  # how many writes/edits of the path had been recorded before it


# A quoted line shorter than this is too likely to be common code ("return None").
QUOTE_MIN_CHARS = 40


@dataclass(frozen=True, slots=True)
class Need:
    """A result needed again after it left the request."""

    tokens: int
    steps_after: int


def _quotable(text: str) -> set[str]:
    """Lines long enough to be a quote, and not rules of punctuation (`=====`)."""
    return {line for raw in text.splitlines()
            if len(line := raw.strip()) >= QUOTE_MIN_CHARS and sum(c.isalnum() for c in line) >= QUOTE_MIN_CHARS // 2}


def covers(outer: FileAccess, inner: FileAccess) -> bool:
    """Whether ``outer`` holds every line ``inner`` holds (same path)."""
    if outer.path != inner.path:
        return False
    if outer.is_whole:
        return True
    if inner.is_whole:
        return False
    if outer.is_tail or inner.is_tail:
        # Two tails: the longer one holds the shorter. A tail against a bounded range:
        # the position is unknown, so it is not known to cover.
        return outer.is_tail and inner.is_tail and outer.start <= inner.start  # type: ignore[operator]
    if outer.end is None:
        return (outer.start or 1) <= (inner.start or 1)
    return (
        inner.end is not None
        and (outer.start or 1) <= (inner.start or 1)
        and inner.end <= outer.end
    )


class ReadTracker:
    """Feed it every tool event of one replayed run, in order."""

    def __init__(self, observation: Callable[[int], Observation | None],
                 gone: Callable[[Observation], bool] = lambda obs: False) -> None:
        # The session's lookup by obs_id (None once a segment ended), to follow notes.
        self._observation = observation
        # A peer's own say on what its latest request lacks (peers.py).
        self._gone = gone
        self._reads: dict[str, list[_Read]] = {}
        self._versions: dict[str, int] = {}
        self.rereads_after_eviction = 0
        self.denied_rereads = 0
        self.needs: dict[int, Need] = {}  # obs_id -> its first need after leaving
        self._out_since: dict[int, int] = {}  # obs_id -> the step it left the request
        self._seen: list[Observation] = []  # every result, in every segment
        self._step = 0
        self._lines: dict[str, list[Observation]] = {}  # quotable line -> results holding it

    def standing(self, observations: Iterable[Observation], step: int) -> int:
        """After a request: how many of ``observations`` (the segment's) it lacks. Notes
        when each result seen so far left it, a new segment's reset included."""
        self._step = step
        for obs in self._seen:
            if self.text_in_context(obs):
                self._out_since.pop(obs.obs_id, None)
            else:
                self._out_since.setdefault(obs.obs_id, step)
        return sum(1 for obs in observations if not self.text_in_context(obs))

    def action(self, text: str) -> None:
        """The agent's next action (its text and call arguments): lines it quotes from
        results no longer in the request."""
        for line in _quotable(text):
            holders = self._lines.get(line, ())
            if holders and not any(self.text_in_context(obs) for obs in holders):
                self._needed(holders[-1])  # the newest that held it: one need, not one per copy

    def _needed(self, obs: Observation) -> None:
        left = self._out_since.get(obs.obs_id)
        if left is not None and obs.obs_id not in self.needs and not self.text_in_context(obs):
            self.needs[obs.obs_id] = Need(obs.source.tokens, self._step - left)

    def text_in_context(self, obs: Observation | None) -> bool:
        if obs is None or obs.denied or obs.state in (ObsState.RECEIPTED, ObsState.ARCHIVED) or self._gone(obs):
            return False
        if obs.alias_of is not None:
            return self.text_in_context(self._observation(obs.alias_of))
        return True

    def before_result(self, accesses: tuple[FileAccess, ...]) -> list[FileAccess]:
        """Record the event's writes; return its reads that are re-reads after eviction
        (judged before the policy answers them)."""
        for access in accesses:
            if access.kind in ("write", "edit"):
                self._versions[access.path] = self._versions.get(access.path, 0) + 1
                if self._reads.get(access.path):
                    self._needed(self._reads[access.path][-1].observation)
        rereads = []
        for access in accesses:
            evicted = self._evicted_earlier(access) if access.kind == "read" else []
            if evicted:
                self._needed(evicted[-1])  # the newest read of the range it lacks
                rereads.append(access)
        return rereads

    def after_result(
        self, accesses: tuple[FileAccess, ...], rereads: list[FileAccess], obs: Observation
    ) -> None:
        """The policy answered the event with ``obs``."""
        self.rereads_after_eviction += len(rereads)
        if rereads and not self.text_in_context(obs):
            self.denied_rereads += len(rereads)
        for access in accesses:
            if access.kind == "read":
                version = self._versions.get(access.path, 0)
                self._reads.setdefault(access.path, []).append(_Read(access, obs, version))
        self._seen.append(obs)
        for line in _quotable(obs.source.text):
            self._lines.setdefault(line, []).append(obs)

    def _evicted_earlier(self, access: FileAccess) -> list[Observation]:
        """The earlier reads of this range the request lacks, unless one it holds covers it."""
        version = self._versions.get(access.path, 0)
        evicted: list[Observation] = []
        for earlier in self._reads.get(access.path, ()):
            unchanged = earlier.version == version or (
                access.content_hash is not None
                and earlier.access.content_hash == access.content_hash
            )
            if not unchanged or not earlier.access.overlaps(access):
                continue
            if self.text_in_context(earlier.observation):
                if covers(earlier.access, access):
                    return []
            else:
                evicted.append(earlier.observation)
        return evicted
