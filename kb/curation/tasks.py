"""Background tasks (Django's tasks framework): the admin's JSONL import and the matcher
build after it.

Whoever changes records in bulk builds the matcher for them before it finishes
(``publish_matcher``): the worker's import task here, and ``manage.py import_records``
(``kb.curation.management.commands.import_records``). The build goes to the store every
host reads (``kb.matching.store``), so a web process loads it instead of compiling on
somebody's paste. The importer itself (``kb.records``) sits below the matcher and cannot
do it; the curation app sits above both.

The default backend persists tasks in the database (django-tasks-db, ``settings.TASKS``)
and ``manage.py db_worker`` runs them, so an upload of any size never runs inside a web
request and a queued job survives a restart of every process. An admin upload stores the
file and an ``ImportJob`` row, then enqueues ``run_import`` with the job's id only: the file
lives in ``KB_IMPORT_DIR`` and progress and report live in the database, where the admin's
job page reads them while the worker imports.

A worker that dies mid-import leaves its job ``running`` with a stale heartbeat (the page
shows it stalled), and its task row ``RUNNING``: nothing of the dead worker can say
otherwise. When the admin shows the job stalled it settles the row (`fail_stalled_task`:
``FAILED``, with the reason), so the task list, ``/metrics``' running tasks and anything
that waits on the task see what happened; ``rerun_import`` hands the job to a worker
again. That is safe because the import is idempotent: the batches already committed come
back as unchanged, and a job is claimed by one conditional update, so two deliveries of
one task import it once.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.apps import apps
from django.conf import settings
from django.tasks import task
from django.utils import timezone

from kb.engine import Matcher
from kb.matching.holder import get_matcher, holder
from kb.records.importer import decompressed, import_jsonl, read_lines
from kb.records.models import ImportJob

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
    """Task entry point: import the file of ``ImportJob`` ``job_id``, if it is still queued
    (claimed in one statement: a second delivery of the task finds it taken), then build
    and publish the matcher for the records it changed before the task ends."""
    now = timezone.now()
    claimed = ImportJob.objects.filter(pk=job_id, state=ImportJob.State.QUEUED).update(
        state=ImportJob.State.RUNNING, started_at=now, heartbeat_at=now
    )
    job = ImportJob.objects.get(pk=job_id)
    if not claimed:
        return {"state": job.state}
    job = execute_import(job)
    patterns = None
    if job.state == ImportJob.State.DONE and changed_records(job.report):
        patterns = publish_matcher_safely()
    return {"state": job.state, "report": job.report, "matcher_patterns": patterns}


def changed_records(report: dict[str, Any]) -> bool:
    """An import report (``ImportReport.as_json()``) that changed what is matched."""
    if report.get("dry_run") or report.get("rolled_back"):
        return False
    return any(report.get(k) for k in ("created", "updated", "disabled", "stale"))


def publish_matcher() -> Matcher:
    """Build the matcher for the current records whole and publish it to the store.

    A full build, not this process's matcher with the changes folded in: what a fresh web
    process looks up in the store is the build of the whole active set (named by its
    content), and only a full build publishes it. Shards that did not change load from
    the local cache, so only what the import changed is compiled, here and not in a page.
    """
    holder.reset()
    return get_matcher()


def publish_matcher_safely() -> int | None:
    """``publish_matcher``'s pattern count, for a writer whose records are committed whatever
    happens to the build: a failure is logged (``None``), and the first paste builds the
    matcher as before."""
    try:
        return len(publish_matcher())
    except Exception:  # the records are in; only the head start on the build is lost
        logger.exception("could not build the matcher after the import")
        return None


@task
def warm_matcher() -> int:
    """Build (or load) the matcher for the current records in the worker and publish it, so
    the first paste after a change is not the request that compiles it; returns its
    pattern count."""
    return len(publish_matcher())


def enqueue_warm_matcher() -> None:
    """Queue a matcher build; a backend that cannot take it leaves the build to the first
    request, as before, and says so in the log."""
    try:
        warm_matcher.enqueue()
    except Exception:  # the import is done either way; only the warm-up is lost
        logger.exception("could not enqueue the matcher build")


#: The task backend whose rows `fail_stalled_task` settles (``settings.TASKS``' default).
TASKS_APP = "django_tasks_db"


class WorkerStopped(Exception):
    """What a stalled job's task row failed with: its worker stopped mid-task."""


def fail_stalled_task(job: ImportJob) -> bool:
    """Mark the task row of a stalled job ``FAILED`` with the reason (the worker running it
    stopped); returns whether a row changed. Only a row still ``RUNNING`` changes, in one
    conditional update: a row its worker finished after all, or one already settled, is
    left as it is. The job itself stays ``running`` (stalled) for ``rerun_import``."""
    if not job.stalled or not job.task_id or not apps.is_installed(TASKS_APP):
        return False
    try:
        task_pk = uuid.UUID(job.task_id)
    except ValueError:  # a task of another backend: no row of this one to settle
        return False
    from django.tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult  # installed with the database backend

    last = job.last_sign_of_life
    reason = (
        f"The worker running import job {job.pk} stopped (killed, crashed or restarted): "
        f"no sign of life since {last.isoformat() if last else 'it started'}, longer than "
        f"KB_IMPORT_STALL_SECONDS ({settings.KB_IMPORT_STALL_SECONDS} s). The batches it "
        "committed are kept; the job can run again from its page."
    )
    changed = DBTaskResult.objects.filter(pk=task_pk, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.FAILED,
        finished_at=timezone.now(),
        exception_class_path=f"{WorkerStopped.__module__}.{WorkerStopped.__qualname__}",
        traceback=reason,
    )
    if changed:
        logger.warning("import job %s stalled: its task %s marked failed", job.pk, task_pk)
    return bool(changed)


def rerun_import(job: ImportJob) -> ImportJob:
    """Queue a stalled job again (its worker died): back to ``queued`` only if it is still
    stalled, so a job whose worker is alive after all, or one already re-run, is left."""
    if not job.stalled or not job.file:
        return job
    requeued = ImportJob.objects.filter(
        pk=job.pk, state=ImportJob.State.RUNNING, heartbeat_at=job.heartbeat_at
    ).update(state=ImportJob.State.QUEUED, error="")
    if not requeued:
        job.refresh_from_db()
        return job
    return enqueue_import(job)


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
