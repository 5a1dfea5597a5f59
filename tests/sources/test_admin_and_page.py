"""The admin's Learn now queues the worker's task and the job's page shows its progress;
the record page says which source and revision a record was learned from, and since
which revision its site is no longer in the code."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from kb.matching.models import MatcherBlob
from kb.records.models import ErrorRecord
from kb.sources.learning import learn
from kb.sources.models import LearnedSite, LearnJob, Source
from kb.sources.tasks import execute_learn
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.sources.support import GitRepo

pytestmark = pytest.mark.django_db

MESSAGE = "the flux capacitor is out of alignment"


def _repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "car")
    repo.write("car/flux.py", f'def align():\n    raise ValueError("{MESSAGE}")\n')
    repo.commit("first")
    return repo


def test_learn_now_queues_the_task_and_the_job_page_shows_progress(
    curator: User, settings: object, tmp_path: Path
) -> None:
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    client = Client()
    client.force_login(curator)  # the Curators group may add and learn sources
    source = Source.objects.create(location=str(_repo(tmp_path).path), repo="doc/car")

    page = client.get(reverse("admin:sources_source_change", args=[source.pk]))
    assert b"Learn now" in page.content
    response = client.post(reverse("admin:sources_source_learn", args=[source.pk]))

    job = LearnJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:sources_learnjob_change", args=[job.pk])
    assert job.state == LearnJob.State.QUEUED  # waiting for the worker, not run in the request
    assert job.task_id
    assert job.created_by == curator
    queued = client.get(response["Location"]).content.decode()
    assert "Waiting for a task worker" in queued
    assert "hx-trigger" in queued  # polled while it runs

    execute_learn(job)  # what the worker does

    job.refresh_from_db()
    assert job.state == LearnJob.State.DONE
    assert job.files_total == job.files_read == 1
    done = client.get(reverse("admin:sources_learnjob_change", args=[job.pk])).content.decode()
    assert "1 of 1 file read" in done
    assert "hx-trigger" not in done
    fragment = client.get(
        reverse("admin:sources_learnjob_progress", args=[job.pk]), HTTP_HX_REQUEST="true"
    )
    assert b"1 of 1 file read" in fragment.content


def test_learn_now_takes_the_right_to_change_sources(tmp_path: Path) -> None:
    reader = User.objects.create_user("reader", is_staff=True)
    reader.user_permissions.add(
        Permission.objects.get(content_type__app_label="sources", codename="view_source")
    )
    client = Client()
    client.force_login(reader)
    source = Source.objects.create(location=str(tmp_path), repo="doc/car")
    response = client.post(reverse("admin:sources_source_learn", args=[source.pk]))
    assert response.status_code == 403
    assert not LearnJob.objects.exists()


def test_a_source_that_cannot_be_read_fails_its_job_with_the_reason(
    curator: User, tmp_path: Path
) -> None:
    client = Client()
    client.force_login(curator)
    source = Source.objects.create(location=str(tmp_path / "nowhere"), repo="doc/car")
    response = client.post(reverse("admin:sources_source_learn", args=[source.pk]))
    job = LearnJob.objects.get()
    assert job.state == LearnJob.State.FAILED  # the in-process backend ran it at once
    assert "no such directory" in job.error
    page = client.get(response["Location"]).content.decode()
    assert "no such directory" in page


def test_the_record_page_says_where_a_record_was_learned_and_when_it_left_the_code(
    client: Client, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    source = Source.objects.create(location=str(repo.path), repo="doc/car")
    learn(source)
    record = ErrorRecord.objects.get(error_message=MESSAGE)
    first = client.get(record.get_absolute_url()).content.decode()
    assert "Learned from <code>doc/car</code>" in first
    assert "not in the code since" not in first

    repo.write("car/flux.py", "def align():\n    return None\n")
    gone = repo.commit("fixed")
    learn(source)

    assert LearnedSite.objects.get(record=record).gone_since == gone
    page = client.get(record.get_absolute_url()).content.decode()
    assert f"not in the code since <code>{gone[:12]}…</code>" in page


def test_a_learn_that_changed_records_publishes_the_matcher_for_them(tmp_path: Path) -> None:
    """Built where the learn ran (the worker, or the command), as after an import: the
    first paste loads it from the store instead of compiling it."""
    source = Source.objects.create(location=str(_repo(tmp_path).path), repo="doc/car")
    assert not MatcherBlob.objects.exists()
    _job, result = execute_learn(LearnJob.objects.create(source=source))
    assert result is not None
    assert result.created == 1
    assert MatcherBlob.objects.exists()
    MatcherBlob.objects.all().delete()
    execute_learn(LearnJob.objects.create(source=source))  # nothing changed: no build
    assert not MatcherBlob.objects.exists()


def test_a_source_added_in_the_admin_gets_its_kind_and_a_repository_name(
    admin_client: Client, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    add = reverse("admin:sources_source_add")
    assert admin_client.get(add).status_code == 200
    form = {"location": str(repo.path), "repo": "", "web_url": "", "revision": "HEAD",
            "publish": "on"}  # fmt: skip
    response = admin_client.post(add, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    source = Source.objects.get()
    assert (source.kind, source.repo, source.publish) == ("git", "local/car", True)
    bad = admin_client.post(add, {**form, "location": "pypi:nope", "revision": "HEAD"})
    assert "expected pypi:NAME==VERSION" in bad.content.decode()
    bad = admin_client.post(add, {**form, "location": "/x", "revision": "--all"})
    assert "A revision never starts with" in bad.content.decode()
