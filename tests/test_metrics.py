"""``GET /metrics``: who may read it, what it counts, and that a scrape of one gunicorn
worker sees every worker's counts (prometheus-client's multiprocess mode)."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.apps import apps
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from kb.records.models import ImportJob
from tests.factories import SEED, import_lines
from tests.servers import Gunicorn, json_post

TOKEN = "test-metrics-token-0123456789"
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
SEED_LINE = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text exposition, keyed by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", **AUTH)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    return samples(response.content.decode())


@pytest.fixture
def token(settings: object) -> str:
    settings.KB_METRICS_TOKEN = TOKEN
    return TOKEN


@pytest.mark.django_db
def test_metrics_do_not_exist_until_a_token_is_set(client: Client, settings: object) -> None:
    settings.KB_METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", **AUTH).status_code == 404


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", TOKEN]
)
def test_metrics_refuse_a_missing_or_wrong_token(client: Client, header: str | None) -> None:
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/metrics", **extra)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"kb_" not in response.content


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_metrics_count_pastes_matched_and_unmatched_and_time_them(client: Client) -> None:
    assert import_lines(SEED).rejected == 0
    before = scrape(client)
    for text in (SEED_LINE, SEED_LINE, "nothing known in here at all"):
        assert client.post("/api/match", {"text": text}, "application/json").status_code == 200
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("kb_pastes_total", outcome="matched") == 2
    assert delta("kb_pastes_total", outcome="unmatched") == 1
    assert delta("kb_match_duration_seconds_count") == 3
    assert delta("kb_request_duration_seconds_count", view="api-1:match", method="POST") == 3
    assert delta("kb_requests_total", view="api-1:match", method="POST", status="200") == 3
    # The matcher was built for the first paste: its size is what the seed gave it.
    assert after[("kb_matcher_records", ())] == 1
    assert after[("kb_matcher_shards", ())] >= 1
    assert sum(v for (n, _), v in after.items() if n == "kb_matcher_build_duration_seconds_count")


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_request_series_are_named_by_view_not_by_path(client: Client) -> None:
    assert import_lines(SEED).rejected == 0
    record_id = SEED["record"]["id"]
    for path in (f"/records/{record_id}/", "/records/nope-1/", "/records/nope-2/", "/no/such"):
        client.get(path)
    views = {
        dict(labels).get("view") for (name, labels) in scrape(client) if name == "kb_requests_total"
    }
    assert "record_detail" in views
    assert "<unresolved>" in views  # a path no URL matched
    assert not any(v and "/" in v for v in views)  # never a path, whatever was requested


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_import_jobs_are_counted_by_state_at_scrape_time(client: Client) -> None:
    for state in ("queued", "queued", "running", "failed"):
        ImportJob.objects.create(source="x.jsonl", state=state)
    got = scrape(client)
    assert got[("kb_import_jobs", (("state", "queued"),))] == 2
    assert got[("kb_import_jobs", (("state", "running"),))] == 1
    assert got[("kb_import_jobs", (("state", "failed"),))] == 1
    assert got[("kb_import_jobs", (("state", "done"),))] == 0  # every state, even empty ones
    assert got[("kb_metrics_database_up", ())] == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_without_the_task_backend_app_there_is_no_queue_depth(client: Client) -> None:
    if apps.is_installed("django_tasks_db"):
        pytest.skip("django_tasks_db is installed: the queue depth test covers it")
    assert not any(name.startswith("kb_task") for name, _ in scrape(client))


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_queue_depth_counts_tasks_ready_for_a_worker(client: Client) -> None:
    if not apps.is_installed("django_tasks_db"):
        pytest.skip("django_tasks_db is not in INSTALLED_APPS (no database task backend)")
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    def task(status: str, **extra: object) -> None:
        DBTaskResult.objects.create(
            status=status,
            task_path="kb.curation.tasks.run_import",
            args_kwargs={"args": [1], "kwargs": {}},
            queue_name="default",
            backend_name="default",
            **extra,
        )

    task("READY")
    task("READY")
    task("READY", run_after=timezone.now() + timezone.timedelta(hours=1))  # not due yet
    task("RUNNING")
    task("SUCCESSFUL")
    got = scrape(client)
    assert got[("kb_task_queue_depth", (("queue", "default"),))] == 2
    assert got[("kb_tasks_running", (("queue", "default"),))] == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("token")
def test_a_scrape_answers_when_the_database_does_not(client: Client) -> None:
    from unittest import mock

    from django.db.utils import OperationalError

    with mock.patch(
        "kb.records.models.ImportJob.objects.order_by", side_effect=OperationalError("gone")
    ):
        got = scrape(client)
    assert got[("kb_metrics_database_up", ())] == 0
    assert not any(name == "kb_import_jobs" for name, _ in got)


@pytest.mark.django_db(transaction=True)
def test_a_scrape_of_one_worker_sees_every_workers_counts(tmp_path: Path) -> None:
    assert import_lines(SEED).rejected == 0
    metrics_dir = tmp_path / "metrics"
    (metrics_dir).mkdir()
    (metrics_dir / "counter_999999.db").write_bytes(b"stale")  # a previous run's file
    env = {"KB_METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    sent = 0
    with Gunicorn(workers=2, log_dir=tmp_path, **env) as server:
        # Concurrent pastes so that both workers serve some (a busy machine may give one
        # worker all of a burst: then send another).
        for _attempt in range(6):
            with ThreadPoolExecutor(max_workers=6) as pool:
                statuses = list(
                    pool.map(
                        lambda _: json_post(server, "/api/match", {"text": SEED_LINE})[0],
                        range(12),
                    )
                )
            assert statuses == [200] * 12
            sent += 12
            pastes = [
                line.split(" ", 1)[0]
                for line in server.access_log.read_text().splitlines()
                if "/api/match" in line
            ]
            if len(set(pastes)) == 2:
                break
        assert len(set(pastes)) == 2, "the pastes did not reach both workers"
        status, _headers, body = server.request("GET", "/metrics", headers=auth)
        assert status == 200
        got = samples(body.decode())
        assert got[("kb_pastes_total", (("outcome", "matched"),))] == sent

        # A worker killed outright: its counts stay in the sums, a new worker takes over.
        victim = int(pastes[0].strip("<>"))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            status, _headers, body = server.request("GET", "/metrics", headers=auth)
            if status == 200:
                break
            time.sleep(0.2)
        assert samples(body.decode())[("kb_pastes_total", (("outcome", "matched"),))] == sent
        errors = server.errors()
    assert "counter_999999.db" not in {p.name for p in metrics_dir.iterdir()}
    assert "Traceback" not in errors


@pytest.mark.django_db(transaction=True)
def test_usage_counts_a_stopping_worker_cannot_write_are_counted_and_logged(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A real worker stops (``SIGTERM``) while the database refuses its last usage flush:
    the counts it held are in the next scrape, from the worker that took over, and in the
    log with their number (docs/reliability.md#r36-nothing-lost)."""
    from django.db import connection

    from kb.loop.models import UsageDay

    assert import_lines(SEED).rejected == 0
    table = UsageDay._meta.db_table
    (tmp_path / "metrics").mkdir()
    env = {
        "KB_METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "KB_USAGE_FLUSH_SECONDS": str(24 * 3600),  # only the stop writes
    }
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with Gunicorn(workers=1, log_dir=tmp_path, **env) as server:
        for text in [SEED_LINE] * 9 + ["nothing known in here at all"] * 3:
            assert json_post(server, "/api/match", {"text": text})[0] == 200
        (victim,) = set(server.worker_pids())
        with connection.cursor() as cursor:  # the table is gone: every write fails
            cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_away")
        try:
            os.kill(victim, signal.SIGTERM)
            deadline = time.monotonic() + 30
            got: dict = {}
            while time.monotonic() < deadline and not got.get(("kb_usage_counts_lost_total", ())):
                status, _headers, body = server.request("GET", "/metrics", headers=auth)
                got = samples(body.decode()) if status == 200 else {}
                time.sleep(0.1)
        finally:
            with connection.cursor() as cursor:
                cursor.execute(f"ALTER TABLE {table}_away RENAME TO {table}")
        assert victim not in server.worker_pids()[-1:], "the scrape was not a new worker's"
    assert got[("kb_usage_counts_lost_total", ())] == 12
    assert got[("kb_usage_flush_failures_total", ())] == 1
    # The app's log (stderr, as in production) says how many.
    assert "12 usage counts lost" in capfd.readouterr().err
    assert not UsageDay.objects.exists()
