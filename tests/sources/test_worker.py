"""Learn now for real: the admin request only queues the learn; a separate
``manage.py db_worker`` process (django-tasks-db, on the test database) reads the
repository and writes the job's progress and result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from kb.sources.models import LearnJob, Source
from tests.curation_support import make_curator
from tests.servers import db_worker
from tests.sources.support import GitRepo

pytestmark = pytest.mark.django_db(transaction=True)


def test_learn_now_only_queues_and_a_real_worker_learns(tmp_path: Path, settings: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    repo = GitRepo(tmp_path / "svc")
    for n in range(3):
        repo.write(f"svc/m{n}.py", f'def f():\n    raise ValueError("service part {n} failed")\n')
    head = repo.commit("first")
    source = Source.objects.create(location=str(repo.path), repo="acme/svc")
    client = Client()
    client.force_login(make_curator())

    client.post(reverse("admin:sources_source_learn", args=[source.pk]))
    job = LearnJob.objects.get()
    assert job.state == LearnJob.State.QUEUED  # the request did not learn

    proc = db_worker("--batch")  # exits once the queue is empty
    assert proc.wait(timeout=180) == 0

    job.refresh_from_db()
    assert job.state == LearnJob.State.DONE, job.error
    assert (job.revision, job.files_total, job.files_read) == (head, 3, 3)
    task = DBTaskResult.objects.get()
    assert task.task_path.endswith("run_learn")
    assert task.status == "SUCCESSFUL"
    assert task.return_value["result"]["files_read"] == 3
    page = client.get(reverse("admin:sources_learnjob_change", args=[job.pk])).content.decode()
    assert "3 of 3 files read" in page
