"""What the copy_database tests share: a database with curator work in it, a fresh
PostgreSQL database to copy into, and what "the same content" means on two databases."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dj_database_url
import pytest
from django.db import connection, connections

from kb.ops.management.commands.copy_database import forget, register
from kb.records.exporter import export_lines
from kb.records.models import ErrorRecord, HistoricalErrorRecord, Status
from kb.records.services import save_curator_edit, set_status

POSTGRES_ENV = "KB_TEST_POSTGRES_URL"


def curate(records: list[ErrorRecord], user: Any) -> None:
    """Curator work of every kind the copy must keep: edits (curated fields and history
    rows signed by ``user``), a retirement, and a revert-like second edit."""
    for n, record in enumerate(records):
        record.solutions = [f"Curated step {n}", "Restart the service"]
        record.documentation = f"Curator's note {n}: see the runbook."
        save_curator_edit(record=record, changed_fields=["solutions", "documentation"], user=user)
    if len(records) > 2:
        set_status([records[1]], Status.RETIRED, user=user, reason="curator: retire")
        again = ErrorRecord.objects.get(pk=records[2].pk)
        again.solutions = ["Second thoughts"]
        save_curator_edit(record=again, changed_fields=["solutions"], user=user)


def history_rows(alias: str) -> list[tuple]:
    rows = HistoricalErrorRecord.objects.using(alias).order_by("history_id")
    return list(
        rows.values_list(
            "history_id",
            "id",
            "history_type",
            "history_date",
            "history_user__username",
            "history_change_reason",
            "solutions",
        )
    )


def exported(alias: str) -> list[str]:
    return list(export_lines(ErrorRecord.objects.using(alias)))


@contextmanager
def opened(alias: str, url: str) -> Iterator[str]:
    """The database at ``url`` under ``alias``, for reading what a copy wrote."""
    register(alias, url)
    try:
        yield alias
    finally:
        forget(alias)


def postgres_server() -> str:
    """A PostgreSQL server URL whose role may create databases: the test database's own
    server when the suite runs on PostgreSQL, else ``KB_TEST_POSTGRES_URL``."""
    if connection.vendor == "postgresql":
        s = connection.settings_dict
        auth = f"{s['USER']}:{s.get('PASSWORD') or ''}@" if s.get("USER") else ""
        return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/postgres"
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"needs a PostgreSQL server: run on PostgreSQL or set {POSTGRES_ENV}")
    return url


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database on the PostgreSQL server, dropped afterwards."""
    import psycopg

    server = dj_database_url.parse(postgres_server())
    name = f"kb_copy_{secrets.token_hex(4)}"
    params = {
        "host": server["HOST"] or "127.0.0.1",
        "port": server["PORT"] or 5432,
        "user": server["USER"],
        "password": server["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    auth = f"{server['USER']}:{server['PASSWORD'] or ''}@"
    try:
        yield f"postgres://{auth}{params['host']}:{params['port']}/{name}"
    finally:
        for conn in connections.all(initialized_only=True):
            if conn.settings_dict.get("NAME") == name:
                conn.close()
        # Without FORCE: that would need the right to end autovacuum's backends too, which
        # a plain DROP ends by itself; a test's own connections are closed above.
        with psycopg.connect(**params) as admin:
            for attempt in range(50):
                try:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
                    break
                except psycopg.errors.ObjectInUse:
                    if attempt == 49:
                        raise
                    time.sleep(0.1)
