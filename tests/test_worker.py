"""The task worker for real: ``manage.py db_worker`` processes on the test database
(django-tasks-db), the admin upload only queueing, a job surviving its worker's death.

The upload runs in the test's process (Django's test client) with the database backend, so
it only writes the job and its task row; a separate ``db_worker`` process then does the
import and the matcher build, as in production. ``--batch`` makes the worker exit once
the queue is empty, so each test knows when the work is done without a sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from kb.records.models import ErrorRecord, ImportJob
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.factories import encode, make_line
from tests.locks import WriteLock
from tests.servers import ROOT, app_env, db_worker

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


# --- A locked database pauses the worker; run_with_worker restarts what exits -----------
# (docs/reliability.md#r31-locked-database)


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Poll until ``predicate()`` holds; fail with ``what`` past a generous bound (a guard
    against a hang, not a measure of speed)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.usefixtures("database_tasks")
def test_a_worker_waits_out_a_write_lock_longer_than_its_busy_timeout_then_runs_the_task(
    tmp_path: Path,
) -> None:
    """A real db_worker (1 s busy timeout) meets a write lock held by another process: it
    logs, backs off and polls again, several times, without exiting; once the lock is
    released it runs the queued task (and, with ``--batch``, exits 0 on an empty queue)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's database-wide write lock")
    from kb.curation.tasks import warm_matcher

    result = warm_matcher.enqueue()  # queued before the lock: the worker finds it after
    lock = WriteLock()
    output = tmp_path / "worker.log"
    try:
        with output.open("wb") as out:
            env = app_env(KB_IMPORT_DIR=str(settings.KB_IMPORT_DIR), SQLITE_WORKER_BUSY_TIMEOUT="1")
            env.pop("KB_TASKS_BACKEND", None)
            worker = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "db_worker",
                    "--batch",
                    "--no-startup-delay",
                    "--interval",
                    "0.1",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            # Two waits of the busy timeout each: the lock outlasted it more than once.
            wait_for(
                lambda: (
                    output.read_text().count("task worker polls again") >= 2
                    or worker.poll() is not None
                ),
                "the worker neither retried nor exited",
            )
            assert worker.poll() is None, output.read_text()[-3000:]
            assert "database locked" in output.read_text()
        finally:
            lock.release()
        assert worker.wait(timeout=180) == 0, output.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    row = DBTaskResult.objects.get(pk=result.id)
    assert row.status == "SUCCESSFUL", row.traceback


def _run_with_worker(log: Path, *web: str) -> subprocess.Popen[bytes]:
    env = app_env(KB_IMPORT_DIR=str(settings.KB_IMPORT_DIR))
    env.pop("KB_TASKS_BACKEND", None)
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "run_with_worker",
                "--worker-arg=--no-startup-delay",
                "--",
                *web,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _started(log: Path) -> dict[str, list[int]]:
    """The pids ``run_with_worker`` says it started, per child, in order."""
    found: dict[str, list[int]] = {}
    for line in log.read_text().splitlines():
        if line.startswith("started ") and "(pid " in line:
            name = line.split()[1]
            found.setdefault(name, []).append(int(line.rsplit("(pid ", 1)[1].rstrip(")")))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_run_with_worker_restarts_a_killed_child_and_leaves_the_other_running(
    tmp_path: Path,
) -> None:
    """Kill the web process: it is started again and the worker keeps its pid; kill the
    worker: likewise. SIGTERM then stops everything and the command exits 0."""
    log = tmp_path / "run.log"
    web = [sys.executable, "-c", "import time; time.sleep(3600)"]
    runner = _run_with_worker(log, *web)
    try:
        wait_for(lambda: set(_started(log)) == {"web", "worker"}, "web and worker did not start")
        first = _started(log)
        web1, worker1 = first["web"][0], first["worker"][0]

        os.killpg(web1, signal.SIGKILL)
        wait_for(lambda: len(_started(log).get("web", [])) == 2, "web was not started again")
        assert runner.poll() is None, log.read_text()
        assert _alive(worker1)
        assert _started(log)["worker"] == [worker1]
        assert "web exited with status -9" in log.read_text()

        os.killpg(worker1, signal.SIGKILL)
        wait_for(lambda: len(_started(log).get("worker", [])) == 2, "worker not started again")
        web2 = _started(log)["web"][1]
        assert _alive(web2)
        assert _started(log)["web"] == [web1, web2]

        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=60) == 0, log.read_text()[-3000:]
        last = _started(log)
        assert not any(_alive(pid) for pids in last.values() for pid in pids)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        for pids in _started(log).values():
            for pid in pids:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
