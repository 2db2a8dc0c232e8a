"""A session's background jobs as every host sees them (agents.tools.journaled_jobs): the
record, what the command printed, shipped in blocks by the machine that runs it, and how
it ended."""

from __future__ import annotations

from django.db import models

from sessions.models.work import Session


class Job(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="jobs")
    handle = models.CharField(max_length=100)
    call_id = models.CharField(max_length=200)
    command = models.TextField()
    host = models.CharField(max_length=255, help_text="The machine that runs it.")
    created_at = models.FloatField(help_text="Seconds since the epoch, on its host's clock.")
    # Set from the database's clock at each shipment: judged against the same clock.
    beat_at = models.DateTimeField()
    # When another host first found the beat stale (since the last beat): lost once that is old.
    suspected_at = models.DateTimeField(null=True, blank=True)
    output_bytes = models.BigIntegerField(default=0, help_text="How much of its output is shipped.")
    last_output_at = models.FloatField(null=True, blank=True)
    # How it ended (result.json's fields); empty while it runs. Written once.
    ending = models.JSONField(null=True, blank=True)
    delivered_to = models.CharField(max_length=200, blank=True,
                                    help_text="The call or step that handed its result to the model.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "handle"], name="one_job_per_handle")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.handle} of session {self.session_id}"


class JobOutput(models.Model):
    """One block of a job's output (agents.tools.journaled_jobs.BLOCK_BYTES, the last one
    as long as it is so far)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="blocks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="one_block_per_index")]

    def __str__(self) -> str:
        return f"block {self.index} of {self.job_id}"
