"""Admin uploads of dataset files, tracked while the import task runs.

Apart from the records because a job is operations, not knowledge: it says what an upload
is doing, and the task that runs it may be in another process.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.db import models
from django.utils import timezone


def _import_storage() -> FileSystemStorage:
    """Where uploaded JSONL files wait for their import task (a directory every worker
    can read: the ``KB_IMPORT_DIR`` setting)."""
    return FileSystemStorage(location=settings.KB_IMPORT_DIR)


class ImportJob(models.Model):
    """One admin upload of a JSONL file: its progress while the import task runs, then
    the importer's report. The task (``kb.tasks.run_import``) may run in another process,
    so everything it needs and everything it reports lives here."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=255, help_text="The uploaded file's name.")
    file = models.FileField(storage=_import_storage, upload_to="%Y/%m/", blank=True)
    size = models.BigIntegerField(default=0)
    dry_run = models.BooleanField(default=False)
    atomic = models.BooleanField(default=False, help_text="All or nothing.")
    state = models.CharField(max_length=20, choices=State, default=State.QUEUED)
    lines_done = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="The last sign of life from the task running it."
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import of {self.source} ({self.get_state_display()})"

    @property
    def percent(self) -> int:
        if self.state == self.State.DONE:
            return 100
        if not self.size:
            return 0
        return min(99, int(self.bytes_done * 100 / self.size))

    @property
    def finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.FAILED}

    @property
    def last_sign_of_life(self) -> datetime | None:
        return self.heartbeat_at or self.started_at

    @property
    def stalled(self) -> bool:
        """Running, but silent for ``KB_IMPORT_STALL_SECONDS``: the process running it has
        most likely stopped (a restart, a crash). The batches it committed are kept."""
        last = self.last_sign_of_life
        if self.state != self.State.RUNNING or last is None:
            return False
        return (timezone.now() - last).total_seconds() > settings.KB_IMPORT_STALL_SECONDS
