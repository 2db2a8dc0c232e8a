"""One session run by one worker: its context and runtime state loaded or started, units
of work until it parks, ends or its slice is used up, each unit's records saved in its
transaction."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from agents.confinement import room_control_group, room_uid, sandbox_policy
from agents.prompts import system_prompt
from agents.providers import RetryPolicy, provider_for
from agents.providers.factory import parse_fallbacks
from agents.tools import registry
from agents.tools.box import ToolBox
from observations.blobs import blob_texts
from observations.calibration import calibration_load
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.journal import Record, StateJournal
from observations.gateway.state import load_state
from rooms.models import Message
from rooms.own_key import check_may_spend_here
from rooms.repository.activity import branch_tip
from rooms.repository.intent import intent_read, intent_relpath
from rooms.repository.worktrees import Worktree
from rooms.services import message_mark_delivered, message_post
from sessions import dispatch
from sessions.analysis.loops import LoopRules
from sessions.events import session_event_append
from sessions.ledger.history import history_record
from sessions.ledger.state_store import gateway_state_read, gateway_state_save
from sessions.models import Session
from sessions.runtime import claims, reviews, states
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import REVIEW, RuntimeState
from sessions.runtime.units import Outcome, UnitResult
from sessions.selectors import agent_post_note, session_lengths
from sessions.services import reviews as review_rows
from sessions.services.approvals import approval_request
from sessions.services.lifecycle import (
    REQUEUE_AFTER,
    enqueue_session,
    session_transition,
    session_wake,
)
from sessions.services.records import unit_records_save
from sessions.services.talk import agent_mentions_mark_delivered, message_binder
from sessions.services.tasks import task_intent, task_write_intent
from sessions.worker.doorbell import Doorbell, InputWatch
from sessions.worker.host import DjangoHost
from sessions.worker.job_journal import DatabaseJournal, journaled, session_jobs
from sessions.worker.lease import LeaseKeeper, LeaseLost
from sessions.worker.memory import DatabaseMemory
from sessions.worker.room import DatabaseRoomView
from sessions.worker.room_git import RoomGit, room_git
from sessions.worker.waits import awaited, watch_jobs

log = logging.getLogger(__name__)


def session_worktree(session: Session, git: RoomGit, reviewed: Session | None) -> Worktree:
    """Where the session works, recorded on its row: its own worktree, made on its first
    run from the upstream's newest work, or (a reviewer) its author's work."""
    if reviewed is not None:
        return git.reviewed_worktree(reviewed, session.pk)
    if not session.branch:
        git.bring_in()
    worktree = git.worktree(session.pk)
    if not session.branch:
        # A new worktree's branch is main as it was: room_status's "since you started".
        session.base_commit = branch_tip(worktree.repo, worktree.branch)
        Session.objects.filter(pk=session.pk).update(branch=worktree.branch, worktree_path=str(worktree.path),
                                                     base_commit=session.base_commit)
    elif session.worktree_path != str(worktree.path):
        # Taken over by a worker that keeps its own copy: the worktree is on its machine now.
        Session.objects.filter(pk=session.pk).update(worktree_path=str(worktree.path))
    return worktree


class SessionRunner:
    def __init__(self, session: Session, owner: str, keeper: LeaseKeeper) -> None:
        self.session, self.owner, self.keeper = session, owner, keeper
        task, agent = session.task, session.agent
        room = task.room
        check_may_spend_here(agent, room)  # before any work: its creator may have left the room since
        # A reviewer reads the author's worktree, as the author left it, and writes nowhere.
        self.reviewed = review_rows.reviewed_session(session)
        self.room_git = room_git(room, session_id=session.pk, owner=owner)
        self.worktree = session_worktree(session, self.room_git, self.reviewed)
        self.toolbox = ToolBox(
            worktree=self.worktree.path,
            state_dir=Path(settings.JOBS_DIR) / str(session.pk),
            yield_seconds=settings.ATRIUM_SHELL_YIELD_SECONDS,
            post_message=self._post_message,
            interrupted=self._interrupted,
            pause=self._pause,
            allowed_tools=registry.REVIEW_TOOLS if self.reviewed is not None else _work_tools(agent.allowed_tools),
            silence_limit_seconds=settings.ATRIUM_JOB_SILENCE_SECONDS,
            sandbox=sandbox_policy(),
            git_dir=self.worktree.repo / ".git",
            network=room.allow_network,
            group=room_control_group(room.pk, room.repo_path),
            uid=room_uid(room.pk),
            session_memory=DatabaseMemory(session.pk),
            room_view=DatabaseRoomView(session, owner=owner, room_git=self.room_git),
            job_journal=DatabaseJournal(session.pk) if journaled() else None,
        )
        provider = provider_for(
            agent.model, api_key=agent.api_key or None, base_url=agent.base_url or None,
            fallbacks=parse_fallbacks(agent.fallback_models), replay_dir=settings.REPLAYS_DIR,
            timeouts=agent.timeouts,
            policy=RetryPolicy(max_attempts=settings.ATRIUM_PROVIDER_MAX_ATTEMPTS,
                               base_delay=settings.ATRIUM_PROVIDER_RETRY_BASE_SECONDS),
        )
        self.provider = provider
        self.host = DjangoHost(session=session, toolbox=self.toolbox, provider=provider, worktree=self.worktree,
                               room_git=self.room_git,
                               reviewed=self.reviewed)
        self.ctx, self.state = self._load_or_start()
        self._saved_runtime = session.runtime_state
        self.loop = StepLoop(self.ctx, self.state, self.host, loop_rules=LoopRules(**settings.ATRIUM_LOOP_RULES))
        # Last: nothing after it can fail and leave its listening thread behind.
        self.doorbell = Doorbell(session.pk)
        self._input_waiting = InputWatch(self.doorbell,
                                         lambda: self.host.has_pending_input(chat_after=self.state.chat_cursor))

    # ---------------------------------------------------------------- setup
    def _load_or_start(self) -> tuple[SessionContext, RuntimeState]:
        session, agent = self.session, self.session.agent
        room = session.task.room
        reviewed = self.reviewed
        role = "\n\n".join(filter(None, [agent.role_prompt, reviews.REVIEWER_ROLE if reviewed else ""]))
        common = {
            "model": agent.model,
            "system_prompt": system_prompt(agent_name=agent.name, role_prompt=role,
                                           check_command="" if reviewed else room.check_command),
            "tools": self.toolbox.schemas(),
            "budget": Budget(window=agent.context_window, output_budget=agent.output_budget,
                             **settings.ATRIUM_FOLD_OVERRIDES),
            "policy": agent.eviction_policy,
            "calibration": calibration_load(agent.model),
            # Fold economics: this model's cache prices and how long such sessions run.
            "economics": CacheEconomics.of(agent.price_for(agent.model)),
            "length_prior": LengthPrior.of(session_lengths(agent, session.model or agent.model)),
        }
        stored = gateway_state_read(session)
        if stored is not None:
            shas = {o["source"]["sha256"] for o in stored.state["observations"]}
            ctx = load_state(stored.state, texts=blob_texts(shas), **common)
            self.journal = stored.journal_for(ctx)
            self._legacy_blob = not stored.seq
            return ctx, RuntimeState.from_dict(session.runtime_state)
        # The intent is in the repository before the first tool call, as the row says it:
        # written if it is missing or says something else (e.g. after a restore).
        intent = task_intent(session.task)
        # (A worker elsewhere has no file of the hub's to write: the hub wrote it with the row.)
        if not self.room_git.keeps_own_copy and intent_read(repo_path=room.repo_path,
                                                            task_id=session.task_id) != intent:
            task_write_intent(task=session.task)
        ctx = SessionContext(intent_text=intent, intent_path=intent_relpath(session.task_id), **common)
        self.journal, self._legacy_blob = StateJournal(), False
        if reviewed is not None:
            # Each round's material (diff, check) arrives as the round opens (loop._next_round).
            ctx.add_user(f"Task: review {reviewed.agent.name}'s work (session {reviewed.pk}) on “{session.task.title}” "
                         "before it merges. The first round follows.", kind="task")
            return ctx, RuntimeState(phase=REVIEW)
        ctx.add_user(f"Task: {session.task.title}\nWork in your worktree on branch {self.worktree.branch}. "
                     "Begin.", kind="task")
        return ctx, RuntimeState()

    # ---------------------------------------------------------------- callbacks
    def _interrupted(self) -> bool:
        """Polled by a running shell or await (every 0.1 s): the database is asked only
        when the session's doorbell rang (sessions.worker.doorbell)."""
        return self.keeper.lost.is_set() or self._input_waiting()

    def _pause(self, seconds: float) -> None:
        """A waiting tool's pause between two looks, cut short by the doorbell: a
        person's message is seen when it rings, not at the next look."""
        self.doorbell.rung.wait(seconds)

    def _post_message(self, text: str) -> str:
        """Post for the agent; what its mentions came to, for its tool result."""
        message = message_post(room=self.session.task.room, author=None, kind=Message.Kind.AGENT, text=text,
                               agent=self.session.agent, bind=message_binder(self.session))
        return agent_post_note(message=message)

    # ---------------------------------------------------------------- running
    def run(self) -> None:
        """Units of work until the session parks or ends, or its time slice is used up:
        then it goes back in the queue, so a few workers serve many sessions in turn. It
        also gives the turn back early, at the next boundary, when a person waits for
        another session that no worker holds (sessions.dispatch.people_waiting)."""
        slice_ends = time.monotonic() + settings.ATRIUM_WORKER_SLICE_SECONDS
        while True:
            if self.keeper.lost.is_set():
                raise LeaseLost
            if self._over_time_limit():
                self.stop(states.TIMED_OUT, claims.time_out_reason(self.session.time_limit_seconds))
                return
            result = self.loop.advance()
            self.host.checkpoint(self.ctx.step)
            if not self.commit(result):
                return
            if self.state.inputs_taken:
                continue  # a person's message taken is answered before the turn goes to another
            if time.monotonic() > slice_ends or dispatch.people_waiting(besides=self.session.pk):
                self.give_turn()
                return

    def _over_time_limit(self) -> bool:
        # The runner holds the lease, so the session is running whatever the loaded row says.
        return claims.over_time_limit(state=states.RUNNING, started_at=self.session.started_at,
                                      time_limit_seconds=self.session.time_limit_seconds, now=timezone.now())

    @transaction.atomic
    def stop(self, target: str, reason: str) -> None:
        session = self._locked()
        session_transition(session, target, reason=reason, expected=states.RUNNING)
        # Once the transition holds (an ending in the journal is never rolled back); the task if that fails.
        transaction.on_commit(lambda: self.toolbox.cancel_jobs(reason), robust=True)
        dispatch.jobs_stop_on_commit(session.pk)

    @transaction.atomic
    def give_turn(self) -> None:
        """End of the time slice: release the lease and queue the session again. It stays
        `running` for people (nothing changed for them); any worker may claim it."""
        session = self._locked()
        Session.objects.filter(pk=session.pk).update(lease_owner="", lease_expires_at=None,
                                                     wake_at=timezone.now() + REQUEUE_AFTER)
        enqueue_session(session.pk)

    def _locked(self) -> Session:
        """The session row, locked, if this worker still holds it (without the old
        whole-state column: the state is in StateRecord rows)."""
        session = Session.objects.select_for_update().select_related("task", "task__room", "agent").defer(
            "gateway_state").get(pk=self.session.pk)
        if session.state != states.RUNNING or session.lease_owner != self.owner:
            raise LeaseLost
        return session

    def _save_state(self, session: Session) -> tuple[Record, list[str]]:
        """Only what this unit changed: a delta of the gateway state (a snapshot now and
        then), the runtime state if it changed; the session's columns left to save."""
        saved = self.journal.record(self.ctx)
        gateway_state_save(session=session, record=saved)
        fields = ["step", "tokens_input", "tokens_cached", "tokens_output"]
        if self._legacy_blob:  # the snapshot just written supersedes the old column
            session.gateway_state, self._legacy_blob = {}, False
            fields.append("gateway_state")
        if saved.decisions_changed:
            session.decisions = self.ctx.decisions.to_json()
            fields.append("decisions")
        runtime = self.state.to_dict()
        if runtime != self._saved_runtime:
            session.runtime_state, self._saved_runtime = runtime, runtime
            fields.append("runtime_state")
        return saved, fields

    @transaction.atomic
    def commit(self, result: UnitResult) -> bool:
        """Persist one unit of work; True if the session goes on running here."""
        session = self._locked()
        ctx = self.ctx
        saved, fields = self._save_state(session)
        unit_records_save(session=session, ctx=ctx, touched=saved.touched, fields=fields,
                          call_records=result.call_records, events=self.host.take_events())
        if result.closed_segment is not None:
            ended, history = result.closed_segment
            history_record(session=session, segment=ended, items=history)
            if session.segment_requested_by and not ctx.segment_requested:
                Session.objects.filter(pk=session.pk, segment_requested_by=session.segment_requested_by).update(
                    segment_requested_by="")
        for message in Message.objects.filter(pk__in=result.delivered):
            message_mark_delivered(message=message)
        agent_mentions_mark_delivered(session=session, message_ids=result.delivered_mentions)
        self._commit_review(session, result)
        if result.approval_request is not None:
            call = result.approval_request
            approval = approval_request(session=session, call_id=call.id, tool=call.name,
                                        arguments=call.arguments if isinstance(call.arguments, dict) else {})
            if approval.state != approval.State.PENDING:
                return True  # decided while this worker was looking: go on, don't park
            session_transition(session, states.AWAITING_APPROVAL, expected=states.RUNNING)
            Session.objects.filter(pk=session.pk).update(wake_at=approval.expires_at)
            return False
        if result.outcome is Outcome.WAIT:
            session_transition(session, states.WAITING, expected=states.RUNNING)
            wake = datetime.fromtimestamp(result.wake_at, tz=UTC)
            Session.objects.filter(pk=session.pk).update(wake_at=wake)
            if (arguments := awaited(session.runtime_state)) is not None:
                # A job's end wakes it at once (beat's sweep, if this process is gone).
                transaction.on_commit(lambda: watch_jobs(session_jobs(session.pk), arguments, until=result.wake_at,
                                                         wake=lambda: _wake_waiting(session.pk)))
            if _moved_on_meanwhile(session, self.state, self.host):
                session_wake(session)  # decided or written while this unit looked: its wake found it running
            return False
        if result.outcome in (Outcome.SUCCEEDED, Outcome.FAILED, Outcome.NEEDS_MERGE):
            session_transition(session, result.outcome.value, reason=result.reason, expected=states.RUNNING)
            return False
        return True

    def _commit_review(self, session: Session, result: UnitResult) -> None:
        """A round opened by this author, or this reviewer's verdict, in the unit's transaction."""
        if result.review_opened is not None:
            round_number, brief = result.review_opened
            review_rows.review_open(session=session, round_number=round_number, brief=brief)
        if result.verdict is not None:
            round_number, decision, reasons = result.verdict
            if not review_rows.review_agent_decide(reviewer_session=session, round_number=round_number,
                                                   decision=decision, reasons=reasons):
                session_event_append(session, "review.superseded", {"round": round_number})
                if result.outcome is Outcome.SUCCEEDED and review_rows.next_review(
                        reviewer_session=session, after=round_number).brief:
                    # A person decided this round and the author already opened the next
                    # one, given to this session: it reviews that instead of ending.
                    result.outcome, result.wake_at = Outcome.WAIT, time.time()


def _moved_on_meanwhile(session: Session, state: RuntimeState, host: DjangoHost) -> bool:
    """A parking session's reason to wait gone while its unit looked: its review round
    decided (or opened), or a message for it written (beat's sweep asks the same later)."""
    if state.phase == REVIEW:
        return review_rows.review_moved_on(session=session, reviewing=host.reviewing, round_number=state.review_round)
    return host.has_pending_input(chat_after=state.chat_cursor)


def _work_tools(allowed: list[str]) -> list[str] | None:
    """A profile's tools for its own work (None: every one): never the verdict, which only
    a review ends with. A list that named nothing else gets the read-only tools, not all."""
    if not allowed:
        return None
    return ([name for name in allowed if name not in registry.VERDICTS]
            or [name for name in registry.REVIEW_TOOLS if name not in registry.VERDICTS])


def _wake_waiting(session_id: int) -> None:
    """Called from a job watcher's thread: queue the session if it still waits."""
    try:
        with transaction.atomic():
            session = Session.objects.select_for_update().select_related("task").get(pk=session_id)
            if session.state == states.WAITING:
                session_wake(session)
    finally:
        connection.close()  # the thread's own connection
