"""Background tasks (Django's tasks framework): the admin's JSONL import.

An admin upload stores the file and an ``ImportJob`` row, then enqueues ``run_import``
with the job's id only, so the task can run in this process (``ImmediateBackend``, the
default) or in a worker of any real backend configured through ``KB_TASKS_BACKEND``: the
file lives in ``KB_IMPORT_DIR`` and progress and report live in the database, where the
admin's job page reads them while the import runs.
"""

from __future__ import annotations

import logging
from typing import Any

from django.tasks import task
from django.utils import timezone

from kb.importer import decompressed, import_jsonl, read_lines
from kb.models import ImportJob

logger = logging.getLogger(__name__)


def _fail(job: ImportJob, exc: Exception, prefix: str = "") -> None:
    """Mark the job failed with the exception's type and message (what its page shows)."""
    ImportJob.objects.filter(pk=job.pk).update(
        state=ImportJob.State.FAILED,
        error=f"{prefix}{type(exc).__name__}: {exc}"[:2000],
        finished_at=timezone.now(),
    )


def execute_import(job: ImportJob) -> ImportJob:
    """Run the importer over the job's file, recording progress and the report."""
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(
        state=ImportJob.State.RUNNING, started_at=now, heartbeat_at=now
    )
    try:
        with job.file.open("rb") as fh:
            stream = decompressed(fh)

            def progress(lines: int) -> None:  # after every batch: progress and heartbeat
                ImportJob.objects.filter(pk=job.pk).update(
                    lines_done=lines, bytes_done=fh.tell(), heartbeat_at=timezone.now()
                )

            report = import_jsonl(
                read_lines(stream),
                dry_run=job.dry_run,
                atomic=job.atomic,
                source=job.source,
                progress=progress,
            )
    except Exception as exc:  # the job page must say what happened, whatever it was
        logger.exception("import job %s failed", job.pk)
        _fail(job, exc)
    else:
        ImportJob.objects.filter(pk=job.pk).update(
            state=ImportJob.State.DONE,
            report=report.as_json(),
            lines_done=report.lines,
            bytes_done=job.size,
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    if job.file:
        job.file.delete(save=True)  # the report stays; the upload is not kept
    return job


@task
def run_import(job_id: int) -> dict[str, Any]:
    """Task entry point: import the file of ``ImportJob`` ``job_id``."""
    job = ImportJob.objects.get(pk=job_id)
    if job.finished:
        return {"state": job.state}
    job = execute_import(job)
    return {"state": job.state, "report": job.report}


def enqueue_import(job: ImportJob) -> ImportJob:
    """Hand the job to the configured task backend; the id is kept for the job page."""
    try:
        result = run_import.enqueue(job.pk)
    except Exception as exc:  # a misconfigured backend: say so on the job page
        logger.exception("could not enqueue import job %s", job.pk)
        _fail(job, exc, "Could not start the import task: ")
    else:
        ImportJob.objects.filter(pk=job.pk).update(task_id=str(result.id)[:64])
    job.refresh_from_db()
    return job
