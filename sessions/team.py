"""The room's team for people: who works on what (and which files), the reviews before
merges, what agents said to each other, and the merge conflicts sessions took back and
resolved.

Read for the room page's team panel, which loads itself after the page: the files come
from the sessions' records of changes (whatever tool made each, on a worker or through
the gateway endpoint), never from a session's saved state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rooms.models import Room
from sessions.models import AgentMention, Review, Session, SessionEvent
from sessions.runtime import states
from sessions.selectors import sessions_files_touched

MAX_LIVE_SHOWN = 20  # live sessions listed
MAX_FILES_SHOWN = 8  # files listed per session
MAX_RESOLVED_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Worker:
    session: Session
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conflict:
    session: Session
    rounds: int


@dataclass(frozen=True, slots=True)
class Team:
    working: list[Worker]
    more_working: int
    reviews_waiting: list[Review]  # rounds not decided yet, oldest first
    reviews: dict[str, int]  # rounds by state; "by_people": decided by a person
    conflicts_resolved: list[Conflict]
    conflicts_resolved_count: int
    conflicts_open: int  # handed back, and the session still ended in needs_merge
    mentions_delivered: int
    mentions_stopped: int

    @property
    def is_empty(self) -> bool:
        return not (self.working or self.conflicts_resolved_count or self.conflicts_open
                    or self.mentions_delivered or self.mentions_stopped or any(self.reviews.values()))


def room_team(room: Room) -> Team:
    live = list(Session.objects.without_state().defer("analysis")
                .filter(task__room=room).exclude(state__in=states.TERMINAL)
                .select_related("agent", "task").order_by("created_at", "pk")[:MAX_LIVE_SHOWN + 1])
    touched = sessions_files_touched([s.pk for s in live[:MAX_LIVE_SHOWN]])
    working = [Worker(session=s, files=tuple(touched.get(s.pk, ()))) for s in live[:MAX_LIVE_SHOWN]]
    rounds = Counter(SessionEvent.objects.filter(session__task__room=room, kind="merge.handed_back")
                     .values_list("session_id", flat=True))
    handed = {s.pk: s for s in Session.objects.without_state().defer("analysis")
              .filter(pk__in=rounds).select_related("agent", "task").order_by("-finished_at", "-pk")}
    resolved = [Conflict(s, rounds[pk]) for pk, s in handed.items() if s.state == states.SUCCEEDED]
    mentions = Counter(AgentMention.objects.filter(message__room=room).values_list("state", flat=True))
    rounds = Review.objects.filter(session__task__room=room)
    reviews = Counter(rounds.values_list("state", flat=True))
    reviews["by_people"] = rounds.filter(decided_by__isnull=False).count()
    waiting = list(rounds.filter(state=Review.State.PENDING).select_related("session__agent", "session__task", "reviewer")
                   .defer(*(f"session__{name}" for name in (*Session.STATE_FIELDS, "analysis")))
                   .order_by("created_at")[:MAX_RESOLVED_SHOWN])
    return Team(
        working=working, more_working=max(0, len(live) - MAX_LIVE_SHOWN),
        reviews_waiting=waiting, reviews=dict(reviews),
        conflicts_resolved=resolved[:MAX_RESOLVED_SHOWN], conflicts_resolved_count=len(resolved),
        conflicts_open=sum(s.state == states.NEEDS_MERGE for s in handed.values()),
        mentions_delivered=mentions[AgentMention.State.DELIVERED],
        mentions_stopped=mentions[AgentMention.State.STOPPED],
    )
