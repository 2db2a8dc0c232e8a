"""A session's jobs in the database (agents.tools.journaled_jobs.JobJournal), so any worker
reports them; and the shipper, the thread of each worker process that ships what the
jobs of its machine print.

Used on PostgreSQL, where workers may be on several machines; an SQLite hub is one
machine, and its jobs' folders say it all.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from agents.tools.jobs import JobRegistry
from agents.tools.journaled_jobs import BLOCK_BYTES, JournaledJobs, JournalEntry, job_folders
from sessions.models import Job, JobOutput, Session

log = logging.getLogger(__name__)

SHIP_SECONDS = 1.0  # how often the shipper ships what running jobs printed, with a beat
ADOPT_SECONDS = 30.0  # how often it looks for job folders no process of this machine ships
ORPHANED_AFTER_SECONDS = 5.0  # a job with no beat for this long has no shipper
START_GRACE_SECONDS = 30.0  # a folder without a row this young is being spawned
GIVE_UP_AFTER_FAILURES = 10  # passes in a row; adopted again later if it still needs shipping


def journaled() -> bool:
    return connection.vendor == "postgresql"


def session_jobs(session_id: int) -> JobRegistry:
    """The registry of a session's jobs (the ToolBox's ``state_dir``/jobs)."""
    directory = Path(settings.JOBS_DIR) / str(session_id) / "jobs"
    silence = settings.ATRIUM_JOB_SILENCE_SECONDS
    if journaled():
        return JournaledJobs(directory, DatabaseJournal(session_id), silence_limit_seconds=silence)
    return JobRegistry(directory, silence_limit_seconds=silence)


class DatabaseJournal:
    """The JobJournal of one session, in Job and JobOutput rows."""

    def __init__(self, session_id: int) -> None:
        self.session_id = session_id

    def _job(self, handle: str):
        return Job.objects.filter(session_id=self.session_id, handle=handle)

    def open(self, handle: str, spec: dict, host: str) -> None:
        Job.objects.create(session_id=self.session_id, handle=handle, call_id=spec["call_id"],
                           command=spec["command"], host=host, created_at=spec["created_at"], beat_at=Now())
        SHIPPER.watch(self.session_id, handle)

    def entry(self, handle: str) -> JournalEntry | None:
        row = self._job(handle).annotate(beat_age=_age("beat_at")).first()
        if row is None:
            return None
        return JournalEntry(handle=row.handle, call_id=row.call_id, command=row.command, host=row.host,
                            created_at=row.created_at, beat_age=row.beat_age.total_seconds(),
                            output_bytes=row.output_bytes, last_output_at=row.last_output_at, ending=row.ending)

    def handles(self) -> list[str]:
        return list(Job.objects.filter(session_id=self.session_id).values_list("handle", flat=True))

    def ship(self, handle: str, blocks: dict[int, bytes], output_bytes: int,
             last_output_at: float | None) -> None:
        with transaction.atomic():
            job_id = self._job(handle).values_list("pk", flat=True).first()
            if job_id is None:
                raise KeyError(handle)
            JobOutput.objects.bulk_create(
                [JobOutput(job_id=job_id, index=index, data=data) for index, data in blocks.items()],
                update_conflicts=True, unique_fields=["job", "index"], update_fields=["data"])
            Job.objects.filter(pk=job_id).update(output_bytes=output_bytes, last_output_at=last_output_at,
                                                 beat_at=Now())

    def read(self, handle: str, start: int, length: int) -> bytes:
        first, last = start // BLOCK_BYTES, (start + length - 1) // BLOCK_BYTES
        data = b"".join(bytes(block) for block in JobOutput.objects.filter(
            job__session_id=self.session_id, job__handle=handle, index__range=(first, last),
        ).order_by("index").values_list("data", flat=True))
        offset = start - first * BLOCK_BYTES
        return data[offset:offset + length]

    def suspect(self, handle: str) -> float:
        self._job(handle).filter(Q(suspected_at__isnull=True) | Q(suspected_at__lt=F("beat_at"))).update(
            suspected_at=Now())
        seen = self._job(handle).annotate(seen=_age("suspected_at")).values_list("seen", flat=True).first()
        if seen is None:
            raise KeyError(handle)
        return seen.total_seconds()

    def settle(self, handle: str, ending: dict) -> dict:
        self._job(handle).filter(ending__isnull=True).update(ending=ending)
        standing = self._job(handle).values_list("ending", flat=True).first()
        if standing is None:
            raise KeyError(handle)
        return standing

    def claim(self, handle: str, token: str) -> str:
        self._job(handle).filter(delivered_to="").update(delivered_to=token)
        holder = self._job(handle).values_list("delivered_to", flat=True).first()
        if holder is None:
            raise KeyError(handle)
        return holder

    def delivered(self, handle: str) -> bool:
        return self._job(handle).exclude(delivered_to="").exists()

    def forget(self, handle: str) -> None:
        self._job(handle).delete()


def _age(field: str) -> ExpressionWrapper:
    """How long ago ``field`` was, on the database's clock (the one beats are stamped with)."""
    return ExpressionWrapper(Now() - F(field), output_field=DurationField())


class Shipper:
    """Ships, every SHIP_SECONDS, what the running jobs this process started print, with
    a beat; and adopts the job folders of this machine whose beat stopped (the worker
    that started them stopped, and the job runs on), so one process ships each job."""

    def __init__(self) -> None:
        self._watched: set[tuple[int, str]] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._adopted_at = float("-inf")
        self._failures: dict[tuple[int, str], int] = {}

    def watch(self, session_id: int, handle: str) -> None:
        with self._lock:
            if self._thread is not None:  # a process that ships (a worker's)
                self._watched.add((session_id, handle))

    def start(self) -> None:
        """Start shipping from this process (once; a forked child starts its own)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, daemon=True, name="job-shipper")
            self._thread.start()

    def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                self.ship_once()
            except Exception:  # the database away for a moment: the next pass ships it
                log.exception("shipping the jobs' output failed")
                connection.close()
            with self._lock:
                idle = not self._watched
            if idle:  # no job runs here: the connection goes back until one does
                connection.close()
            time.sleep(max(0.0, SHIP_SECONDS - (time.monotonic() - started)))

    def ship_once(self) -> None:
        if not journaled():
            return
        if time.monotonic() - self._adopted_at > ADOPT_SECONDS:
            self._adopted_at = time.monotonic()
            self._adopt()
        with self._lock:
            watched = sorted(self._watched)
        for job in watched:
            try:
                going = session_jobs(job[0]).ship(job[1])
            except KeyError:  # retracted, or its session is gone
                going = False
            except Exception:  # this job's alone: the others are shipped and beat all the same
                log.exception("shipping job %s of session %s failed", job[1], job[0])
                connection.close()  # a failed statement may have left it unusable
                self._failures[job] = self._failures.get(job, 0) + 1
                going = self._failures[job] < GIVE_UP_AFTER_FAILURES
            else:
                self._failures.pop(job, None)
            if not going:
                self._failures.pop(job, None)
                with self._lock:
                    self._watched.discard(job)

    def _adopt(self) -> None:
        with self._lock:
            watched = set(self._watched)
        found = [job for job in job_folders(Path(settings.JOBS_DIR)) if job not in watched]
        sessions = set(Session.objects.filter(pk__in={session_id for session_id, _ in found})
                       .values_list("pk", flat=True))
        for session_id, handle in found:
            if session_id not in sessions:  # deleted: retention removes its folder
                continue
            entry = DatabaseJournal(session_id).entry(handle)
            if entry is None:
                adopt = _unrecorded_needs_shipping(Path(settings.JOBS_DIR) / str(session_id) / "jobs" / handle)
            else:  # an ending to bring here, or nobody beating for it
                adopt = entry.ending is not None or entry.beat_age > ORPHANED_AFTER_SECONDS
            if adopt:
                with self._lock:
                    self._watched.add((session_id, handle))


def _unrecorded_needs_shipping(job_dir: Path) -> bool:
    """A folder the journal has no row for: a job being spawned right now (its row comes
    next), or one from before the journal, which matters only until its result is taken."""
    try:
        if time.time() - (job_dir / "spec.json").stat().st_mtime < START_GRACE_SECONDS:
            return False
    except FileNotFoundError:
        return False
    return not (job_dir / "delivered").exists()


SHIPPER = Shipper()


def start_shipping(**_) -> None:
    """Celery's worker_process_init: each worker process ships its machine's jobs."""
    SHIPPER.start()
