"""Running scenarios through the real runtime and storing what they showed.

Each run gets its own room (the scenario's repository), approval rules, agent profile
(recording its requests) and task; its session runs on the hub's Celery workers like
any other. The driver here plays the people: when the agent has ended a turn (parked
on ``await``) it edits the constraints, asks for a new segment and sends the next
steer, as the scenario says, in one transaction; it decides approvals as the scenario
says. When the session ends, the stored requests are read back and judged
(evals/checks.py) and the run goes to the eval ledger.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from agents.models import AgentProfile
from evals.checks import CheckResult, Facts, judge_behaviour, judge_requests, parse_request
from evals.models import EvalBatch, EvalRun
from evals.provider import turn_end_steps
from evals.scenario import Scenario, canonical
from observations.blobs import blob_texts
from rooms.models import RoomAgent
from rooms.repository.git import git
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import Approval, ApprovalRule, ProviderCall, Segment, Session, SessionEvent
from sessions.runtime import states
from sessions.selectors import session_files_touched
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_cancel, session_request_segment, session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create, task_update_intent

ENDED = states.TERMINAL | {states.NEEDS_MERGE}
ROLE_PROMPT = (
    "This session is a conversation with a person who sends several messages. When you have done what the "
    "latest message asks, call `await` (no handles) to wait for the next message. Answer without tool calls "
    "only when the person's message says it is the last one."
)


def store_script(scenario: Scenario) -> str:
    """The scenario as the `script:` provider reads it, in the hub's eval folder; its name."""
    folder = Path(settings.EVAL_SCRIPTS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{scenario.name}-{scenario.version}.json"
    path = folder / name
    if not path.exists():
        tmp = folder / f".{name}.tmp"
        tmp.write_text(canonical(scenario.raw), encoding="utf-8")
        tmp.replace(path)
    return name


@dataclass
class ScenarioRun:
    scenario: Scenario
    batch: EvalBatch
    person: AbstractBaseUser
    run: int = 1
    timeout: float = 600.0
    session: Session | None = None
    base: str = ""
    delivered: int = 1  # turns the person has started (turn 1 is the task)
    started: float = field(default_factory=time.monotonic)
    done: bool = False
    error: str = ""

    @property
    def scripted(self) -> bool:
        return self.batch.scripted

    # ----------------------------------------------------------- setup
    def start(self) -> None:
        scenario, batch = self.scenario, self.batch
        with tempfile.TemporaryDirectory(prefix="atrium-eval-") as folder:
            for path, text in scenario.files.items():
                target = Path(folder) / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            room = room_create(owner=self.person, name=f"eval {batch.pk}: {scenario.name} #{self.run}"[:100],
                               source=TemplateRepository(Path(folder)), check_command=scenario.check_command)
        for rule in scenario.rules:
            ApprovalRule.objects.create(room=room, tool=rule["tool"], decision=rule["decision"],
                                        path_glob=rule["path_glob"], command_prefix=rule["command_prefix"])
        model = f"script:{store_script(scenario)}" if self.scripted else batch.model
        agent = AgentProfile.objects.create(
            name=f"eval-{batch.pk}-{scenario.name}-{self.run}"[:80], model=model, role_prompt=ROLE_PROMPT,
            context_window=scenario.window, output_budget=scenario.output_budget, record_requests=True,
            created_by=self.person)
        RoomAgent.objects.create(room=room, agent=agent)
        task = task_create(room=room, actor=self.person, title=scenario.title, objective=scenario.objective,
                           constraints=scenario.constraints)
        self.base = git("rev-parse", room.default_branch, cwd=room.repo_path).strip()
        self.session = session_start(task=task, agent=agent, actor=self.person)
        self.turn_ends = turn_end_steps(scenario)

    # ----------------------------------------------------------- driving
    def poll(self) -> bool:
        """One look at the session: decide approvals, deliver the next turn when the
        agent waits for it. True once the run is over."""
        if self.done:
            return True
        session = self.session
        session.refresh_from_db(fields=["state", "step", "reason"])
        if session.state in ENDED:
            self.done = True
            return True
        if time.monotonic() - self.started > self.timeout:
            self.error = f"timed out after {self.timeout:g} s at step {session.step} (state {session.state})"
            session_cancel(session=session, actor=None, reason=f"eval: {self.error}")
            self.done = True
            return True
        if session.state == states.AWAITING_APPROVAL:
            self._decide_approvals()
        elif session.state == states.WAITING and self.delivered < len(self.scenario.turns) and self._turn_ended():
            self._deliver(self.scenario.turns[self.delivered])
            self.delivered += 1
        return False

    def _turn_ended(self) -> bool:
        if not self.scripted:
            return True  # a real model waits when it is done (ROLE_PROMPT)
        return self.session.step >= self.turn_ends[self.delivered - 1]

    def _deliver(self, turn) -> None:
        session, person = self.session, self.person
        if turn.constraints is not None:
            # Commits the intent file: git runs with no transaction open.
            task = session.task
            task_update_intent(task=task, actor=person, objective=task.objective,
                               definition_of_done=task.definition_of_done, prerequisites=task.prerequisites,
                               constraints=turn.constraints)
        with transaction.atomic():
            if turn.reset:
                session_request_segment(session=session, actor=person)
            session_steer(session=session, actor=person, text=turn.person, replaces=turn.replaces)

    def _decide_approvals(self) -> None:
        for approval in Approval.objects.filter(session=self.session, state=Approval.State.PENDING):
            decision, reason = "approve", ""
            for rule in self.scenario.approvals:
                if rule["tool"] == approval.tool and _matches(rule, approval.arguments):
                    decision, reason = rule["decision"], rule.get("reason", "")
                    break
            with transaction.atomic():  # the reason is stored before the session wakes
                approval_decide(approval=approval, actor=self.person, decision=decision)
                if reason:
                    Approval.objects.filter(pk=approval.pk).update(reason=reason)

    # ----------------------------------------------------------- judging
    def finish(self) -> EvalRun:
        session = self.session
        session.refresh_from_db()
        scenario = self.scenario
        calls = list(ProviderCall.objects.filter(session=session, purpose="step").exclude(request_sha256="")
                     .order_by("id").values_list("step", "request_sha256"))
        texts = blob_texts({sha for _, sha in calls})
        ends = self.turn_ends if self.scripted else _turn_ends_from_events(session, len(scenario.turns))
        requests = [parse_request(texts[sha], number=n, step=step, turn_ends=ends)
                    for n, (step, sha) in enumerate(calls, start=1)]
        facts = self._facts(session)
        results: list[CheckResult] = [judge_requests(c, requests, facts) for c in scenario.request_checks()]
        results += [judge_behaviour(c, facts) for c in scenario.behaviour_checks()]
        reason = self.error
        if not reason and session.state != states.SUCCEEDED:
            reason = f"the session ended {session.state}: {session.reason}"
        if not reason and self.delivered < len(scenario.turns):
            reason = f"the session ended at turn {self.delivered} of {len(scenario.turns)}"
        request_results = [r for r in results if r.family == "request"]
        behaviour_results = [r for r in results if r.family == "behaviour"]
        passed = all(r.passed for r in request_results) and (
            self.scripted or all(r.passed for r in behaviour_results))
        state = EvalRun.State.ERROR if reason else EvalRun.State.PASSED if passed else EvalRun.State.FAILED
        return EvalRun.objects.create(
            batch=self.batch, scenario=scenario.name, scenario_version=scenario.version,
            scenario_kind=scenario.kind, run=self.run, model=self.batch.model, room=session.task.room,
            session=session, state=state, reason=reason, resets_asked=scenario.resets_asked,
            resets=Segment.objects.filter(session=session).count(), requests_checked=len(requests),
            request_passed=sum(r.passed for r in request_results), request_total=len(request_results),
            behaviour_passed=sum(r.passed for r in behaviour_results), behaviour_total=len(behaviour_results),
            checks=[r.to_dict() for r in results], duration_ms=int((time.monotonic() - self.started) * 1000),
        )

    def _facts(self, session: Session) -> Facts:
        repo = session.task.room.repo_path
        changed: tuple[str, ...] = ()
        files: dict[str, str] = {}
        if session.branch:
            head = git("rev-parse", "--verify", "--quiet", f"refs/heads/{session.branch}", cwd=repo,
                       check=False).strip()
            if head:
                changed = tuple(p for p in git("diff", "--name-only", "--no-renames", self.base, head, cwd=repo)
                                .splitlines() if p)
                for path in changed:
                    text = git("show", f"{head}:{path}", cwd=repo, check=False)
                    files[path] = text
        reply = (SessionEvent.objects.filter(session=session, kind="model.reply").order_by("-seq")
                 .values_list("payload", flat=True).first() or {})
        return Facts(ledger_files=tuple(session_files_touched(session)), git_files=changed,
                     last_answer=reply.get("text", ""), files=files, scripted=self.scripted)


def _matches(rule: dict[str, str], arguments: dict) -> bool:
    import fnmatch

    if rule.get("path_glob") and not fnmatch.fnmatch(str(arguments.get("path", "")),
                                                     rule["path_glob"].replace("**", "*")):
        return False
    return not (rule.get("command_prefix") and not str(arguments.get("command", "")).startswith(
        rule["command_prefix"]))


def _turn_ends_from_events(session: Session, turns: int) -> list[int]:
    """With a real model: a turn ends when a person's message was delivered after it."""
    ends = []
    for seq in SessionEvent.objects.filter(session=session, kind="input.delivered").values_list("seq", flat=True):
        step = (SessionEvent.objects.filter(session=session, kind="step.started", seq__gt=seq).order_by("seq")
                .values_list("payload", flat=True).first() or {}).get("step", 10**9)
        ends.append(step - 1)
    ends = sorted(ends)[: turns - 1]
    return ends + [10**9] * (turns - len(ends))


def run_scenarios(runs: list[ScenarioRun], *, poll_seconds: float = 0.05,
                  progress: Callable[[ScenarioRun], None] | None = None) -> list[EvalRun]:
    """Start every run, drive them side by side until each has ended, judge them."""
    for run in runs:
        run.start()
    finished: dict[int, EvalRun] = {}
    while len(finished) < len(runs):
        for index, run in enumerate(runs):
            if index in finished:
                continue
            try:
                over = run.poll()
            except Exception as exc:  # a broken run is recorded; the others go on
                run.error, over = f"{type(exc).__name__}: {exc}", True
                run.done = True
            if over:
                finished[index] = run.finish()
                if progress:
                    progress(run)
        time.sleep(poll_seconds)
    return [finished[i] for i in range(len(runs))]


def skipped_run(batch: EvalBatch, scenario: Scenario, run: int, reason: str) -> EvalRun:
    return EvalRun.objects.create(batch=batch, scenario=scenario.name, scenario_version=scenario.version,
                                  scenario_kind=scenario.kind, run=run, model=batch.model,
                                  state=EvalRun.State.SKIPPED, reason=reason, resets_asked=scenario.resets_asked)


def run_summary(run: EvalRun) -> dict:
    return {
        "scenario": run.scenario, "version": run.scenario_version, "kind": run.scenario_kind, "run": run.run,
        "model": run.model, "state": run.state, "reason": run.reason, "resets_asked": run.resets_asked,
        "resets": run.resets, "requests_checked": run.requests_checked,
        "request_checks": {"passed": run.request_passed, "total": run.request_total},
        "behaviour_checks": {"passed": run.behaviour_passed, "total": run.behaviour_total},
        "session": run.session_id, "room": run.room_id, "duration_ms": run.duration_ms, "checks": run.checks,
    }


def dumps(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
