"""The learn task (Django's tasks framework, run by ``manage.py db_worker``).

Learning a source reads a whole repository: it never runs inside a web request. The
admin's **Learn now** creates a ``LearnJob`` and enqueues ``run_learn`` with its id only;
progress and the result live in the job's row, where its admin page reads them while the
worker learns. ``manage.py learn`` runs the same ``execute_learn`` in its own process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.tasks import task
from django.utils import timezone

from kb.sources.history import learn_releases
from kb.sources.learning import LearnResult, SourceError, learn
from kb.sources.models import LearnJob, Source
from kb.sources.signals import learned

logger = logging.getLogger(__name__)

__all__ = ["enqueue_learn", "execute_learn", "run_learn"]


def _counts(result: LearnResult) -> dict[str, Any]:
    """What a job's page shows of a learn under way, as its row stores it (kept as it is
    when the learn finishes, beside the totals only the end knows)."""
    return {
        "revision": result.revision[:200],
        "since": result.since[:200],
        "files_total": result.files_total,
        "files_read": result.files_read,
        "files_skipped": result.files_skipped,
        "sites": result.sites,
        "errors": result.errors,
    }


def _fail(job: LearnJob, message: str) -> None:
    now = timezone.now()
    LearnJob.objects.filter(pk=job.pk).update(
        state=LearnJob.State.FAILED, error=message[:2000], finished_at=now
    )
    Source.objects.filter(pk=job.source_id).update(
        state=Source.State.FAILED, last_error=message[:2000]
    )


def execute_learn(
    job: LearnJob, show: Callable[[LearnResult], None] | None = None
) -> tuple[LearnJob, LearnResult | None]:
    """Learn the job's source, recording progress in the job (and passing it to ``show``,
    the command's printer); a source that cannot be read fails the job with the reason
    (what was learned before stays)."""
    now = timezone.now()
    LearnJob.objects.filter(pk=job.pk, started_at__isnull=True).update(started_at=now)
    LearnJob.objects.filter(pk=job.pk).update(state=LearnJob.State.RUNNING, heartbeat_at=now)
    Source.objects.filter(pk=job.source_id).update(state=Source.State.LEARNING)

    def progress(result: LearnResult) -> None:
        LearnJob.objects.filter(pk=job.pk).update(**_counts(result), heartbeat_at=timezone.now())
        if show:
            show(result)

    result = None
    try:
        source = job.source
        if (source.releases or source.since) and not job.requested_revision:
            result = learn_releases(source, progress=progress)
        else:
            result = learn(source, revision=job.requested_revision or None, progress=progress)
    except SourceError as error:
        _fail(job, str(error))
    except Exception as error:  # the job page must say what happened, whatever it was
        logger.exception("learn job %s failed", job.pk)
        _fail(job, f"{type(error).__name__}: {error}")
    else:
        LearnJob.objects.filter(pk=job.pk).update(
            state=LearnJob.State.DONE,
            **_counts(result),
            created=result.created,
            updated=result.updated,
            unchanged=result.unchanged,
            gone=result.gone,
            report=result.as_json(),
            finished_at=timezone.now(),
        )
        if result.created or result.updated:
            learned.send(sender=__name__, result=result)
    job.refresh_from_db()
    return job, result


@task
def run_learn(job_id: int) -> dict[str, Any]:
    """Task entry point: learn the source of ``LearnJob`` ``job_id`` if the job is still
    queued (claimed in one statement: a second delivery finds it taken)."""
    now = timezone.now()
    claimed = LearnJob.objects.filter(pk=job_id, state=LearnJob.State.QUEUED).update(
        state=LearnJob.State.RUNNING, started_at=now, heartbeat_at=now
    )
    job = LearnJob.objects.select_related("source").get(pk=job_id)
    if not claimed:
        return {"state": job.state}
    job, result = execute_learn(job)
    return {"state": job.state, "result": result.contract_json() if result else None}


def enqueue_learn(source: Source, *, revision: str = "", user: Any = None) -> LearnJob:
    """Create a job for ``source`` and hand it to the task backend (the admin's Learn now);
    a backend that cannot take it fails the job with the reason."""
    job = LearnJob.objects.create(
        source=source,
        requested_revision=revision,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    try:
        queued = run_learn.enqueue(job.pk)
    except Exception as error:  # a misconfigured backend: say so on the job page
        logger.exception("could not enqueue learn job %s", job.pk)
        _fail(job, f"Could not start the learn task: {type(error).__name__}: {error}")
    else:
        LearnJob.objects.filter(pk=job.pk).update(task_id=str(queued.id)[:64])
    job.refresh_from_db()
    return job
