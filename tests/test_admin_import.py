"""Admin upload of a JSONL file: the same importer, run as a background task, with a job
page that shows progress and the report (errors by line and field)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from kb.curation.tasks import execute_import, run_import
from kb.records.models import ErrorRecord, ImportJob
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.curation_support import change_url, form_data
from tests.factories import encode, make_line

pytestmark = pytest.mark.django_db
UPLOAD = "admin:kb_importjob_upload"


def jsonl(*lines: dict | bytes) -> bytes:
    return b"".join(encode(*lines))


def upload(client: Client, name: str, content: bytes, **options: str) -> ImportJob:
    response = client.post(reverse(UPLOAD), {"file": SimpleUploadedFile(name, content), **options})
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ImportJob.objects.latest("id")
    assert response["Location"] == reverse("admin:kb_importjob_change", args=[job.pk])
    return job


def test_upload_runs_the_importer_and_shows_its_report(curator_client: Client) -> None:
    good = [make_line(), make_line()]
    bad = make_line(lineNumber="eighty")
    job = upload(curator_client, "batch.jsonl", jsonl(good[0], bad, good[1]))

    assert job.state == ImportJob.State.DONE
    assert job.report["created"] == 2
    assert job.report["rejected"] == 1
    assert job.report["errors"] == [
        {"line": 2, "field": "lineNumber", "message": "must be an integer, not str"}
    ]
    assert job.lines_done == 3
    assert job.percent == 100
    assert job.created_by.username == "curator"
    assert not job.file  # the upload is not kept once imported
    record = ErrorRecord.objects.get(pk=good[0]["record"]["id"])
    assert record.history.latest().history_change_reason == "import:batch.jsonl"

    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "Rejected lines" in text
    assert "lineNumber" in text
    assert "hx-trigger" not in text  # finished: no more polling


def test_dry_run_upload_writes_nothing(curator_client: Client) -> None:
    job = upload(curator_client, "dry.jsonl", jsonl(make_line()), dry_run="on")
    assert job.report["created"] == 1
    assert job.report["dry_run"] is True
    assert ErrorRecord.objects.count() == 0


def test_all_or_nothing_upload_rolls_back_on_a_bad_line(curator_client: Client) -> None:
    job = upload(curator_client, "atomic.jsonl", jsonl(make_line(), b"not json\n"), atomic="on")
    assert job.report["rolled_back"] is True
    assert ErrorRecord.objects.count() == 0


def test_gzipped_upload_is_read(curator_client: Client) -> None:
    job = upload(curator_client, "batch.jsonl.gz", gzip.compress(jsonl(make_line())))
    assert job.report["created"] == 1


def test_upload_refuses_other_file_types(curator_client: Client) -> None:
    response = curator_client.post(
        reverse(UPLOAD), {"file": SimpleUploadedFile("notes.txt", b"hello")}
    )
    assert response.status_code == 200
    assert "Upload a .jsonl file" in response.content.decode()
    assert ImportJob.objects.count() == 0


def test_reimport_through_the_admin_reports_conflicts(curator_client: Client) -> None:
    line = make_line()
    upload(curator_client, "first.jsonl", jsonl(line))
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    curator_client.post(change_url(record), form_data(record, solutions="Curated advice"))
    line["record"]["solutions"] = ["Dataset advice"]
    job = upload(curator_client, "second.jsonl", jsonl(line))

    assert job.report["conflicts"] == 1
    assert job.report["conflicted"] == [{"id": record.pk, "field": "solutions"}]
    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk])).content
    assert b"Conflicts with curated fields" in page
    record.refresh_from_db()
    assert record.solutions == ["Curated advice"]


def test_a_running_job_page_polls_its_progress(curator_client: Client) -> None:
    job = ImportJob.objects.create(
        source="big.jsonl", state=ImportJob.State.RUNNING, size=1000, bytes_done=250
    )
    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk]))
    text = page.content.decode()
    progress_url = reverse("admin:kb_importjob_progress", args=[job.pk])
    assert f'hx-get="{progress_url}"' in text
    assert "25%" in text

    fragment = curator_client.get(progress_url, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert b"<html" not in fragment.content
    assert b"25%" in fragment.content
    assert "HX-Request" in fragment["Vary"]
    plain = curator_client.get(progress_url)
    assert plain.status_code == 302


def test_a_job_whose_worker_went_silent_is_shown_stalled_and_not_polled(
    curator_client: Client, settings: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    silent = timezone.now() - timedelta(seconds=settings.KB_IMPORT_STALL_SECONDS + 60)
    job = ImportJob.objects.create(
        source="big.jsonl", state=ImportJob.State.RUNNING, size=1000, bytes_done=250,
        started_at=silent, heartbeat_at=silent,
    )  # fmt: skip
    text = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk])).content
    assert b"Stalled" in text
    assert b"Upload the same file again to finish" in text
    assert b"hx-trigger" not in text  # nothing left to poll
    listing = curator_client.get(reverse("admin:kb_importjob_changelist")).content
    assert b"Stalled" in listing
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())  # alive again
    text = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk])).content
    assert b"Stalled" not in text
    assert b"hx-trigger" in text


def test_the_task_beats_while_it_imports() -> None:
    job = ImportJob.objects.create(source="t.jsonl")
    job.file.save("t.jsonl", ContentFile(jsonl(make_line(), make_line())), save=True)
    job = execute_import(job)
    assert job.state == ImportJob.State.DONE
    assert job.heartbeat_at is not None
    assert job.started_at <= job.heartbeat_at <= job.finished_at
    assert not job.stalled


def test_a_failing_import_marks_the_job_failed() -> None:
    job = ImportJob.objects.create(source="gone.jsonl")
    job.file.save("gone.jsonl", ContentFile(b""), save=True)
    job.file.storage.delete(job.file.name)  # the worker cannot read it
    job = execute_import(job)
    assert job.state == ImportJob.State.FAILED
    assert job.error


def test_the_task_imports_by_job_id() -> None:
    job = ImportJob.objects.create(source="t.jsonl")
    job.file.save("t.jsonl", ContentFile(jsonl(make_line())), save=True)
    result = run_import.enqueue(job.pk)
    assert result.return_value["state"] == "done"
    assert json.loads(json.dumps(result.return_value))["report"]["created"] == 1


def test_staff_without_the_curators_group_cannot_upload() -> None:
    user = User.objects.create_user("staffer", is_staff=True)
    client = Client()
    client.force_login(user)
    assert client.get(reverse(UPLOAD)).status_code == 403


def test_a_task_backend_that_cannot_enqueue_fails_the_job_visibly(
    curator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Refusing:
        def enqueue(self, *args: object) -> None:
            raise RuntimeError("queue is down")

    monkeypatch.setattr("kb.curation.tasks.run_import", Refusing())
    job = upload(curator_client, "later.jsonl", jsonl(make_line()))
    assert job.state == ImportJob.State.FAILED
    assert "queue is down" in job.error
    page = curator_client.get(reverse("admin:kb_importjob_change", args=[job.pk]))
    assert b"queue is down" in page.content


def test_a_queued_job_waits_for_a_real_backend(curator_client: Client, settings: object) -> None:
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    job = upload(curator_client, "queued.jsonl", jsonl(make_line()))
    assert job.state == ImportJob.State.QUEUED
    assert job.task_id
    assert job.file  # kept for the worker
    assert ErrorRecord.objects.count() == 0
    execute_import(job)  # what the worker would do
    job.refresh_from_db()
    assert job.state == ImportJob.State.DONE
    assert ErrorRecord.objects.count() == 1
