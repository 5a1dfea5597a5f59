"""Learn now for real: the admin request only queues the learn; a separate
``manage.py db_worker`` process (django-tasks-db, on the test database) reads the
repository and writes the job's progress and result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from kb.records.models import ErrorRecord
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


def test_a_source_whose_releases_the_admin_names_is_walked_by_a_real_worker(
    tmp_path: Path, settings: Any
) -> None:
    """The admin's form names the releases (tag pattern, separator, oldest); Learn now
    queues the job and the worker walks them, each message with its wordings."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    repo = GitRepo(tmp_path / "svc")
    old, new = "the service part could not start", "the service part could not be started"
    repo.write("svc/m.py", f'def f():\n    raise ValueError("{old}")\n')
    repo.commit("first", tag="rel_1_0")
    repo.write("svc/m.py", f'def f():\n    raise ValueError("{new}")\n')
    repo.commit("reword", tag="rel_1_1")
    client = Client()
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", None))
    form = {"location": str(repo.path), "repo": "acme/svc", "web_url": "", "revision": "HEAD",
            "releases": "rel_*", "release_separator": "_", "since": "",
            "publish": "on"}  # fmt: skip
    added = client.post(reverse("admin:sources_source_add"), form)
    assert added.status_code == 302, added.content.decode()[:2000]
    bad = client.post(reverse("admin:sources_source_add"), {**form, "releases": "rel_1"})
    assert "A tag pattern with one *" in bad.content.decode()
    source = Source.objects.get()
    assert (source.releases, source.release_separator) == ("rel_*", "_")

    client.post(reverse("admin:sources_source_learn", args=[source.pk]))
    proc = db_worker("--batch")
    assert proc.wait(timeout=180) == 0

    job = LearnJob.objects.get()
    assert job.state == LearnJob.State.DONE, job.error
    assert DBTaskResult.objects.get().return_value["result"]["releases"] == 2
    record = ErrorRecord.objects.get(repo="acme/svc")
    assert (record.error_message, record.first_release, record.last_release) == (new, "1.0", "1.1")
    assert [w["message"] for w in record.release_history["wordings"]] == [old, new]
    page = client.get(reverse("admin:sources_learnjob_change", args=[job.pk])).content.decode()
    assert "2 releases, 1 older wordings, 0 removed sites kept" in page
