"""The deadlock counter: re-reads of text a policy had taken out, and denied re-reads.

Judged on the recorded file accesses, independently of the gateway's own ledger (which
only knows exact ranges): a read is a *re-read after eviction* when an earlier read of
the same path overlaps it with unchanged content (no recorded write or edit of the path
in between, or the same content hash) and that earlier text had been replaced by a
receipt or stub at that moment, while no earlier read still in the request covers the
range. It is a *denied re-read* when the policy's answer to it is again not the text
(the room-wide "already read" rule, or a note pointing at text that is gone): the
loop an agent cannot get out of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from observations.gateway.transcript import Observation, ObsState
from observations.replay.trajectory import FileAccess


@dataclass(slots=True)
class _Read:
    access: FileAccess
    observation: Observation
    version: int  # how many writes/edits of the path had been recorded before it


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

    def __init__(self, observation: Callable[[int], Observation | None]) -> None:
        # The session's lookup by obs_id (None once a segment ended), to follow notes.
        self._observation = observation
        self._reads: dict[str, list[_Read]] = {}
        self._versions: dict[str, int] = {}
        self.rereads_after_eviction = 0
        self.denied_rereads = 0

    def text_in_context(self, obs: Observation | None) -> bool:
        if obs is None or obs.denied or obs.state in (ObsState.RECEIPTED, ObsState.ARCHIVED):
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
        return [a for a in accesses if a.kind == "read" and self._evicted_earlier(a)]

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

    def _evicted_earlier(self, access: FileAccess) -> bool:
        version = self._versions.get(access.path, 0)
        evicted = False
        for earlier in self._reads.get(access.path, ()):
            unchanged = earlier.version == version or (
                access.content_hash is not None
                and earlier.access.content_hash == access.content_hash
            )
            if not unchanged or not earlier.access.overlaps(access):
                continue
            if self.text_in_context(earlier.observation):
                if covers(earlier.access, access):
                    return False
            else:
                evicted = True
        return evicted
