"""A task row whose worker died does not stay ``RUNNING`` forever
(docs/reliability.md#r36-nothing-lost): when the admin shows an import job stalled, the
job's task row (django-tasks-db) is marked ``FAILED`` with the reason, once, by
``kb.curation.tasks.fail_stalled_task``; a job that is not stalled keeps its row as it is.

One test kills a real ``db_worker`` mid-import; the others build the same state (a job
``running`` with a stale heartbeat, its task row ``RUNNING``) directly."""

from __future__ import annotations

import signal
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.tasks import TaskResultStatus
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from kb.curation.tasks import WorkerStopped, fail_stalled_task
from kb.records.models import ImportJob
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.factories import encode, make_line
from tests.servers import db_worker

STALL = 60  # KB_IMPORT_STALL_SECONDS in these tests
FAILED_WITH = f"{WorkerStopped.__module__}.{WorkerStopped.__qualname__}"


def running_job(silent_for: float) -> tuple[ImportJob, DBTaskResult]:
    """A job ``running`` with no sign of life for ``silent_for`` seconds, and its task row
    ``RUNNING`` (what a worker killed mid-import leaves)."""
    row = DBTaskResult.objects.create(
        status=TaskResultStatus.RUNNING,
        task_path="kb.curation.tasks.run_import",
        args_kwargs={"args": [0], "kwargs": {}},
        queue_name="default",
        backend_name="default",
        run_after=timezone.now(),
        started_at=timezone.now(),
    )
    last = timezone.now() - timedelta(seconds=silent_for)
    job = ImportJob.objects.create(
        source="w.jsonl",
        state=ImportJob.State.RUNNING,
        started_at=last,
        heartbeat_at=last,
        task_id=str(row.pk),
    )
    return job, row


DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.fixture
def stall(settings: Any) -> None:
    settings.TASKS = DATABASE_TASKS
    settings.KB_IMPORT_STALL_SECONDS = STALL


def show_list(client: Client, job: ImportJob) -> bytes:
    return client.get(reverse("admin:kb_importjob_changelist")).content


def show_page(client: Client, job: ImportJob) -> bytes:
    return client.get(reverse("admin:kb_importjob_change", args=[job.pk])).content


def show_progress(client: Client, job: ImportJob) -> bytes:
    url = reverse("admin:kb_importjob_progress", args=[job.pk])
    return client.get(url, HTTP_HX_REQUEST="true").content


@pytest.mark.django_db
@pytest.mark.usefixtures("stall")
@pytest.mark.parametrize("show", [show_list, show_page, show_progress])
def test_showing_a_stalled_job_marks_its_task_row_failed_with_the_reason(
    curator_client: Client, show: Any
) -> None:
    job, row = running_job(silent_for=STALL + 5)
    assert b"Stalled" in show(curator_client, job)
    row.refresh_from_db()
    assert row.status == TaskResultStatus.FAILED
    assert row.finished_at is not None
    assert row.exception_class_path == FAILED_WITH
    assert f"import job {job.pk} stopped" in row.traceback
    assert "KB_IMPORT_STALL_SECONDS" in row.traceback
    # What the task framework reads back says the same.
    (error,) = row.task_result.errors
    assert error.exception_class is WorkerStopped
    job.refresh_from_db()
    assert job.state == ImportJob.State.RUNNING  # still stalled: it can run again


@pytest.mark.django_db
@pytest.mark.usefixtures("stall")
def test_a_job_that_is_not_stalled_keeps_its_running_task_row(curator_client: Client) -> None:
    job, row = running_job(silent_for=STALL - 30)
    for show in (show_list, show_page, show_progress):
        assert b"Stalled" not in show(curator_client, job)
    row.refresh_from_db()
    assert row.status == TaskResultStatus.RUNNING
    assert not fail_stalled_task(job)


@pytest.mark.django_db
@pytest.mark.usefixtures("stall")
def test_a_task_row_is_settled_once_and_a_finished_one_never(curator_client: Client) -> None:
    job, _row = running_job(silent_for=STALL + 5)
    assert fail_stalled_task(job)
    assert not fail_stalled_task(job)  # already failed: nothing to change
    done, done_row = running_job(silent_for=STALL + 5)
    DBTaskResult.objects.filter(pk=done_row.pk).update(status=TaskResultStatus.SUCCESSFUL)
    assert not fail_stalled_task(done)  # its worker finished it after all
    done_row.refresh_from_db()
    assert done_row.status == TaskResultStatus.SUCCESSFUL
    other = ImportJob.objects.create(
        source="x.jsonl",
        state=ImportJob.State.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=STALL + 5),
        task_id="not-a-database-task",  # another backend's id: no row here
    )
    assert not fail_stalled_task(other)
    assert not DBTaskResult.objects.filter(pk=uuid.UUID(int=0)).exists()


@pytest.mark.django_db(transaction=True)
def test_the_task_row_of_an_import_whose_real_worker_was_killed_is_failed_when_shown(
    curator_client: Client, settings: Any
) -> None:
    settings.TASKS = DATABASE_TASKS
    content = b"".join(encode(*[make_line() for _ in range(8000)]))
    response = curator_client.post(
        reverse("admin:kb_importjob_upload"), {"file": SimpleUploadedFile("w.jsonl", content)}
    )
    assert response.status_code == 302
    job = ImportJob.objects.latest("id")
    proc = db_worker()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state != ImportJob.State.QUEUED:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # dies mid-import: nothing of it can settle the row
    proc.wait(timeout=30)
    job.refresh_from_db()
    assert job.state == ImportJob.State.RUNNING, "the import finished before the kill"
    row = DBTaskResult.objects.get(pk=job.task_id)
    assert row.status == TaskResultStatus.RUNNING

    settings.KB_IMPORT_STALL_SECONDS = 0  # its silence is as long as any, from now on
    assert b"Stalled" in show_page(curator_client, job)
    row.refresh_from_db()
    assert row.status == TaskResultStatus.FAILED
    assert row.exception_class_path == FAILED_WITH
