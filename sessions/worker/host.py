"""The step loop's view of the world, backed by the database, the worktree and the room.

Reads happen at any time; writes are collected and committed by `commit_unit` in one
transaction together with the session's state, under the worker's lease.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
import time
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents.providers import Completion, ProviderError
from agents.tools._jobwrapper import COPY_DRAIN_SECONDS, copy_capped
from agents.tools.box import ToolBox
from agents.tools.outcome import ToolOutcome
from agents.tools.paths import PathRefused, resolve_path
from agents.tools.sandbox import launched
from agents.tools.shell import JobReport
from agents.tools.text import read_log_bounded
from observations.gateway.messages import Request, ToolCall, serialize_request
from rooms import upstream_link
from rooms.repository.git import GitError
from rooms.repository.worktrees import (
    BroughtIn,
    MergeResult,
    Worktree,
    WorktreeError,
    branch_diff,
    merge_under_way,
    worktree_bring_in,
    worktree_commit,
    worktree_unresolved,
)
from sessions.approval_rules import room_rules
from sessions.events import model_waiting_broadcast
from sessions.models import Approval as ApprovalRow
from sessions.models import Observation, Session
from sessions.runtime import reviews
from sessions.runtime.approvals import Rule
from sessions.runtime.conflicts import conflict_report, markers_left_report
from sessions.runtime.delivery import Input
from sessions.runtime.obligations import JobView
from sessions.runtime.units import Approval, CheckResult
from sessions.services import reviews as review_rows
from sessions.services.tasks import task_intent_now
from sessions.worker import inputs
from sessions.worker.file_reads import WorktreeReads
from sessions.worker.proposals import session_propose
from sessions.worker.room_git import RoomGit
from sessions.worker.waits import jobs_ready

CHECK_OUTPUT_MAX = 12_000


class DjangoHost:
    def __init__(self, *, session: Session, toolbox: ToolBox, provider, worktree: Worktree, room_git: RoomGit,
                 reviewed: Session | None = None) -> None:
        self.session = session
        self.room = session.task.room
        self.room_git = room_git
        self.toolbox = toolbox
        self.provider = provider
        self.worktree = worktree
        # A reviewer's session (sessions/runtime/reviews.py): it runs no check and merges nothing.
        self.reviewed = reviewed
        self.reviewing = reviewed is not None
        self.check_command = "" if self.reviewing else self.room.check_command
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._conflict: MergeResult | None = None  # of the last finish
        self._reads = WorktreeReads(worktree)
        self.file_changes = self._reads.file_changes

    # -------------------------------------------------------------- inputs
    def settle_jobs(self, token: str) -> tuple[JobReport, ...]:
        return self.toolbox.settle_jobs(token)

    def job_views(self) -> list[JobView]:
        jobs = self.toolbox.jobs
        views = []
        for handle in jobs.handles():
            status = jobs.status(handle)
            views.append(JobView(handle=handle, command=status.command, running=not status.done,
                                 unread=status.done and not jobs.delivered(handle), describe=status.describe()))
        return views

    def pending_inputs(self, *, chat_after: int) -> list[Input]:
        return inputs.pending_inputs(self.session, chat_after=chat_after)

    def has_pending_input(self, *, chat_after: int) -> bool:
        return inputs.has_pending_input(self.session, chat_after=chat_after)

    def segment_request(self) -> str:
        return Session.objects.filter(pk=self.session.pk).values_list("segment_requested_by", flat=True).first() or ""

    def read_intent(self) -> str | None:
        # From the task's row, which the file is rendered from: the same on every machine.
        return task_intent_now(self.session.task_id)

    # -------------------------------------------------------------- approvals
    def approval_rules(self) -> list[Rule]:
        return room_rules(self.room.pk)

    def approval(self, call_id: str) -> Approval | None:
        row = ApprovalRow.objects.filter(session=self.session, call_id=call_id).select_related("decided_by").first()
        if row is None or row.state == ApprovalRow.State.PENDING:
            return None
        return Approval(state=row.state, by=row.decided_by.get_username() if row.decided_by else "", always=row.always,
                        reason=row.reason)

    def earlier_call_ids(self, before_seq: int) -> set[str]:
        # Committed rows only: a unit replayed after a crash keeps its ids, and so its records.
        return set(Observation.objects.filter(session=self.session, seq__lt=before_seq)
                   .values_list("call_id", flat=True))

    def rule_arguments(self, call: ToolCall) -> dict[str, Any]:
        """The call's arguments with its path resolved in the worktree, as rules see it."""
        arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {}
        path = arguments.get("path")
        if isinstance(path, str):
            with contextlib.suppress(PathRefused):  # the tool itself refuses it, with the reason
                arguments["path"] = resolve_path(self.worktree.path, path).relative
        return arguments

    # -------------------------------------------------------------- effects
    def execute(self, call: ToolCall) -> ToolOutcome:
        return self.toolbox.execute(call)

    def cannot_apply(self, call: ToolCall) -> str | None:
        return self.toolbox.cannot_apply(call)

    def skip(self, call: ToolCall, reason: str) -> ToolOutcome:
        return self.toolbox.skip(call, reason)

    def await_ready(self, call: ToolCall, *, chat_after: int) -> bool:
        """Would `await` return at once? Its jobs ended, or a person wrote."""
        if self.has_pending_input(chat_after=chat_after):
            return True
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        return jobs_ready(self.toolbox.jobs, arguments)

    def run_check(self) -> CheckResult:
        """The room's check, confined like every command of the session; raises
        SandboxUnavailable when it cannot be. Its output comes through a pipe into a file
        (bounded as every command's is: copy_capped) and back as head and tail."""
        started = time.monotonic()
        confined = self.toolbox.confine(self.check_command)
        log_path = self.toolbox.state_dir / "check-output.log"
        limit = settings.ATRIUM_CHECK_TIMEOUT_SECONDS
        with log_path.open("wb", buffering=0) as log, launched(confined) as (argv, pass_fds):
            child = subprocess.Popen(argv, cwd=confined.cwd, env=confined.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                     pass_fds=pass_fds)
            copying = threading.Thread(target=copy_capped, daemon=True, args=(
                os.dup(child.stdout.fileno()), log, self.toolbox.shell_config.sandbox.limits.output_bytes))
            child.stdout.close()
            copying.start()
            code = 124
            try:
                code = child.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                pass
            finally:  # past its time, or the worker stopping under it: the check does not run on
                if child.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
            copying.join(COPY_DRAIN_SECONDS)
        output = read_log_bounded(log_path, CHECK_OUTPUT_MAX)
        if code == 124 and time.monotonic() - started >= limit:
            output += f"\n[the check was stopped after {limit} s]"
        self.toolbox.check_disk()  # what the check wrote counts too
        return CheckResult(self.check_command, code, output, int((time.monotonic() - started) * 1000))

    def checkpoint(self, step: int) -> None:
        """After each unit, before it is recorded, on a worker that keeps its own copy of
        the room's repository: what the worktree holds (a call's files, a finished job's),
        committed and pushed, so a worker that takes the session over (this one dead)
        finds every file its recorded calls wrote; nothing when nothing changed. Not while
        main is being merged in: the files may hold markers, and a commit would end the
        merge with them."""
        if self.room_git.keeps_own_copy and not self.reviewing and not merge_under_way(self.worktree):
            self._commit_work(f"work in progress, step {step}")

    def _commit_work(self, what: str = "") -> str | None:
        session, agent = self.session, self.session.agent
        self.toolbox.check_disk()  # a job stopped past the limit may have left the worktree over it
        about = ", ".join(filter(None, [f"task {session.task_id}", agent.name, f"attempt {session.attempt}", what]))
        commit = worktree_commit(
            worktree=self.worktree, message=f"{session.task.title} ({about})",
            author=f"{agent.name} <agent-{agent.pk}@atrium.local>",
        )
        if commit is not None:
            self.room_git.committed(self.worktree.branch)
        return commit

    # -------------------------------------------------------------- review before merge
    def review_request(self, round_number: int, check: CheckResult | None) -> str | None:
        """The author's work committed on its branch and the reviewer's brief for round
        ``round_number`` (the round itself opens when the unit commits), or None when the
        room has no reviewer."""
        reviewer = review_rows.room_reviewer(self.room.pk)
        if self.reviewing or reviewer is None:
            return None
        if self._commit_work() is None:
            self.room_git.committed(self.worktree.branch)  # the reviewer reads the branch as the hub has it
        try:
            diff = branch_diff(repo=self.room_git.main_now(), branch=self.worktree.branch,
                               target=self.room.default_branch)
        except GitError as exc:
            diff = f"(the diff could not be made: {exc})"
        session = self.session
        return reviews.review_brief(
            author=session.agent.name, session_id=session.pk, title=session.task.title, round_number=round_number,
            diff=diff, check_line=check.line if check else "", check_output=check.output if check else "",
            intent_path=session.task.intent_path)

    def review_verdict(self, round_number: int) -> reviews.Verdict | None:
        return review_rows.review_verdict(session=self.session, round_number=round_number)

    def next_review(self, after: int) -> reviews.NextRound:
        found = review_rows.next_review(reviewer_session=self.session, after=after)
        if found.brief:  # the round's work, where the reviewer reads a checkout of its own
            self.room_git.reviewed_worktree(self.reviewed, self.session.pk)
        return found

    def finish(self) -> tuple[bool, str]:
        self._conflict = None
        if left := worktree_unresolved(worktree=self.worktree):  # the loop asks conflict_left first
            return False, "conflict markers left in " + ", ".join(left)
        commit = self._commit_work()
        session = self.session
        if upstream_link.proposes(self.room):
            return session_propose(session, self.room_git, self.worktree.branch)
        result = self.room_git.merge(self.worktree.branch, title=session.task.title)
        if result.status == "conflict":
            self._conflict = result
            if not result.conflicts:
                return False, f"not merged: {result.detail}"
            return False, "merge conflict in " + ", ".join(result.conflicts)
        if commit is None and result.status == "up_to_date":
            return True, "no changes to merge"
        return True, f"merged {self.worktree.branch} into {self.room.default_branch} ({result.main_after[:10]})"

    def hand_back_conflict(self, round_number: int) -> str | None:
        """Main merged into the session's branch, conflicts left for the agent; None for a
        conflict in files only the hub writes (a person decides)."""
        result = self._conflict
        if result is None or result.for_a_person:
            return None
        return self._report(self._bring_in(), round_number)

    def conflict_left(self, round_number: int) -> tuple[str, str] | None:
        if not (left := worktree_unresolved(worktree=self.worktree)):
            return None
        brought = self._bring_in()  # the merge under way, reported again
        # Files staged with their markers are no longer "unmerged" for git: name them.
        report = self._report(brought, round_number) if brought and brought.conflicts else markers_left_report(left)
        return "conflict markers left in " + ", ".join(left), report

    def _bring_in(self) -> BroughtIn | None:
        try:
            self.room_git.main_now()
            return worktree_bring_in(worktree=self.worktree, target=self.room.default_branch)
        except (GitError, WorktreeError):
            return None

    def _report(self, brought: BroughtIn | None, round_number: int) -> str | None:
        if brought is None:
            return None
        return conflict_report(conflicts=brought.conflicts, texts=brought.texts, merged_meanwhile=brought.merged_meanwhile,
                               round_number=round_number, target=self.room.default_branch)

    def call_model(self, request: Request) -> Completion:
        since = timezone.now()
        Session.objects.filter(pk=self.session.pk).update(model_waiting_since=since)
        model_waiting_broadcast(self.session.pk, since)
        if not self.session.agent.record_requests:
            return self.provider.call(request)
        # Evals judge what the model was sent: the request rides with its record.
        sent = serialize_request(request)
        try:
            completion = self.provider.call(request)
        except ProviderError as exc:
            if exc.record is not None:
                exc.record = dataclasses.replace(exc.record, request=sent)
            raise
        return Completion(completion.turn, dataclasses.replace(completion.record, request=sent))

    def close(self) -> None:
        """The run is over: the worktree's watch goes (sessions/worker/worktree_watch.py)."""
        self._reads.close()

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((kind, payload))

    def take_events(self) -> list[tuple[str, dict[str, Any]]]:
        events, self.events = self.events, []
        return events
