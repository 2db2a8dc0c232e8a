"""The sessions app's models. Their tables keep the names they had when these models
lived in agents and observations (``db_table``): the move was a change of Python home,
not of data."""

from sessions.models.approvals import Approval, ApprovalRule, Decision
from sessions.models.calls import ProviderCall
from sessions.models.events import SessionEvent
from sessions.models.jobs import Job, JobOutput
from sessions.models.ledger import (
    Fold,
    HistoryEntry,
    LedgerEntry,
    Observation,
    Payload,
    Segment,
    StateRecord,
)
from sessions.models.proposals import SessionProposal
from sessions.models.reviews import Review
from sessions.models.talk import AgentMention, SessionMessage, message_session_id
from sessions.models.work import Session, SessionQuerySet, Task

__all__ = [
    "AgentMention", "Approval", "ApprovalRule", "Decision", "Fold", "HistoryEntry", "Job", "JobOutput", "LedgerEntry", "Observation",
    "Payload", "ProviderCall", "Review", "Segment", "Session", "SessionEvent", "SessionMessage", "SessionProposal",
    "SessionQuerySet", "StateRecord", "Task", "message_session_id",
]
