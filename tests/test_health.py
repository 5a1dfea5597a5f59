"""``/healthz`` is cheap, checks the database, and says 503 when it can't
(docs/reliability.md#r23-health-check).

Cheap is asserted as work done, one query and no template or matcher, not as a time:
its latency is measured by benchmarks/bench_pages.py.
"""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_healthz_answers_200_with_a_database_check(client: Client) -> None:
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_runs_one_query_and_no_template_or_matcher(
    client: Client, django_assert_num_queries: object
) -> None:
    from kb.matching import holder as matching

    with (
        mock.patch.object(matching, "get_matcher", side_effect=AssertionError("matched")),
        mock.patch("django.template.loader.get_template", side_effect=AssertionError("tpl")),
        django_assert_num_queries(1),
    ):
        response = client.get(reverse("healthz"))
    assert response.status_code == 200


def test_healthz_is_never_cached(client: Client) -> None:
    response = client.get(reverse("healthz"))
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]


def test_healthz_answers_503_when_the_database_is_unavailable(client: Client) -> None:
    from django.db.utils import OperationalError

    with mock.patch.object(
        connection, "cursor", side_effect=OperationalError("unable to open database file")
    ):
        response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert "unable to open" not in response.content.decode()  # no internals leaked


def test_healthz_refuses_post(client: Client) -> None:
    assert client.post(reverse("healthz")).status_code == 405


def test_healthz_answers_503_when_the_database_file_path_is_broken(tmp_path: object) -> None:
    """A real process whose DATABASE_URL points into a directory that does not exist."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import django, json; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/healthz');"
        "print(json.dumps([r.status_code, r.json()]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kb.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/missing-dir/kb.sqlite3",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip(), result.stderr[-3000:]
    status, body = json.loads(result.stdout.strip().splitlines()[-1])
    assert status == 503, result.stderr
    assert body["status"] == "unavailable"
