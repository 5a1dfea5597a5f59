"""The task worker for real: ``manage.py db_worker`` processes on the test database
(django-tasks-db), the admin upload only queueing, a job surviving its worker's death.

The upload runs in the test's process (Django's test client) with the database backend, so
it only writes the job and its task row; a separate ``db_worker`` process then does the
import and the matcher build, as in production. ``--batch`` makes the worker exit once
the queue is empty, so each test knows when the work is done without a sleep.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from kb.records.models import ErrorRecord, ImportJob
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.factories import encode, make_line
from tests.servers import db_worker

pytestmark = pytest.mark.django_db(transaction=True)

DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.fixture
def database_tasks(settings: Any) -> None:
    settings.TASKS = DATABASE_TASKS


def run_queue() -> None:
    """Run every queued task in a fresh worker process, until the queue is empty."""
    proc = db_worker("--batch")
    assert proc.wait(timeout=180) == 0


def upload(client: Client, lines: list[dict[str, Any]]) -> ImportJob:
    content = b"".join(encode(*lines))
    response = client.post(
        reverse("admin:kb_importjob_upload"), {"file": SimpleUploadedFile("w.jsonl", content)}
    )
    assert response.status_code == 302
    return ImportJob.objects.latest("id")


@pytest.mark.usefixtures("database_tasks")
def test_an_upload_only_queues_and_a_real_worker_imports_then_builds_the_matcher(
    curator_client: Client,
) -> None:
    lines = [make_line() for _ in range(5)]
    job = upload(curator_client, lines)
    assert job.state == ImportJob.State.QUEUED  # the request did not import
    assert ErrorRecord.objects.count() == 0
    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk]))
    assert b"Waiting for a task worker" in page.content

    run_queue()  # a worker started after the upload: the queue was in the database

    job.refresh_from_db()
    assert job.state == ImportJob.State.DONE, job.error
    assert job.report["created"] == 5
    assert ErrorRecord.objects.count() == 5
    tasks = {r.task_path.rsplit(".", 1)[-1]: r for r in DBTaskResult.objects.all()}
    assert tasks["run_import"].status == "SUCCESSFUL"
    # The import task built the matcher before it ended: not the first paste.
    assert tasks["run_import"].return_value["matcher_patterns"] == 5
    assert set(tasks) == {"run_import"}


@pytest.mark.usefixtures("database_tasks")
def test_a_job_whose_worker_died_is_shown_stalled_and_runs_again_to_the_same_records(
    curator_client: Client, settings: Any
) -> None:
    lines = [make_line() for _ in range(8000)]
    job = upload(curator_client, lines)
    proc = db_worker()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state != ImportJob.State.QUEUED:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # the worker dies mid-import: no clean-up at all
    proc.wait(timeout=30)
    job.refresh_from_db()
    assert job.state == ImportJob.State.RUNNING, "the import finished before the kill"
    assert job.file  # kept: the job can still run

    settings.KB_IMPORT_STALL_SECONDS = 0  # its silence is as long as any, from now on
    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk]))
    assert b"Stalled" in page.content
    assert b"Run again" in page.content

    rerun = reverse("admin:kb_importjob_rerun", args=[job.pk])
    assert curator_client.post(rerun).status_code == 302
    job.refresh_from_db()
    assert job.state == ImportJob.State.QUEUED
    run_queue()

    job.refresh_from_db()
    assert job.state == ImportJob.State.DONE, job.error
    assert ErrorRecord.objects.count() == len(lines)  # the batches kept, the rest added
    report = job.report
    assert report["created"] + report["unchanged"] == len(lines)
    assert report["rejected"] == 0
    assert not job.file

    # Done is done: running it again changes nothing and queues nothing.
    assert curator_client.post(rerun).status_code == 302
    job.refresh_from_db()
    assert job.state == ImportJob.State.DONE
