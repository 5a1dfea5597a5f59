"""Deletes from anywhere bump the revision (docs/reliability.md#r38-deletes-bump-revision).

A worker keeps matching a record until the records' revision moves; ``kb.records.services``
bumps it, but a record deleted in ``manage.py shell`` (``QuerySet.delete()``, an instance's
``delete()``) or in SQL went around it, and every worker kept matching and showing it. The
database's own trigger (migration ``kb.0020``) bumps it for each of those, on SQLite and
PostgreSQL: here with a holder in this process, with two real gunicorn workers that had
the record loaded, and across migrating back and forth.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from kb.matching.holder import MatcherHolder
from kb.records.models import ErrorRecord, current_revision
from tests.factories import make_record
from tests.servers import ROOT, Gunicorn, app_env, json_post

LEASE = "Shard 7 lost its lease while compacting the write-ahead log"
OTHER = "Tenant acme exceeded its ingest quota of 40 partitions per node"
TRIGGERS = {
    "sqlite": {"kb_record_deleted"},
    "postgresql": {"kb_record_deleted", "kb_record_truncated"},
}


def _record(message: str) -> ErrorRecord:
    words = message.split(" ")
    template = " ".join([words[0], "{}", *words[2:]])
    pattern = " ".join([words[0], "(.+?)", *words[2:]])
    return make_record(errorMessage=template, messagePattern=pattern)


def _matched(holder: MatcherHolder, text: str) -> set[str]:
    return {m.key for m in holder.get().match(text).matches}


def _raw_delete(pk: str) -> None:
    """What an ``sqlite3``/``psql`` session would do: the rows that refer to the record
    first (the foreign keys are the database's), then the record; no Django signal."""
    with connection.cursor() as cursor:
        for table in ("kb_recordtag", "kb_proposal", "kb_vote", "kb_recordtally"):
            cursor.execute(f"DELETE FROM {table} WHERE record_id = %s", [pk])
        cursor.execute("DELETE FROM kb_errorrecord WHERE id = %s", [pk])


DELETES = {
    "queryset": lambda pk: ErrorRecord.objects.filter(pk=pk).delete(),
    "instance": lambda pk: ErrorRecord.objects.get(pk=pk).delete(),
    "raw_sql": _raw_delete,
}


def _triggers() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'kb_errorrecord'::regclass "
                "AND NOT tgisinternal"
            )
        return {row[0] for row in cursor.fetchall()} & TRIGGERS[connection.vendor]


@pytest.mark.django_db
@pytest.mark.parametrize("how", sorted(DELETES))
def test_a_delete_from_anywhere_bumps_the_revision_and_the_holder_drops_it(how: str) -> None:
    """On PostgreSQL the trigger runs per statement and looks at the deleted rows; on
    SQLite it is a row trigger: either way a delete of nothing leaves the revision."""
    record = _record(LEASE)
    other = _record(OTHER)
    holder = MatcherHolder()
    assert _matched(holder, LEASE) == {record.pk}
    before = current_revision()
    if how != "instance":  # a delete that removes nothing moves nothing
        DELETES[how]("no-such-record")
        assert current_revision() == before

    DELETES[how](record.pk)

    assert current_revision() > before
    assert _matched(holder, LEASE) == set()
    assert record.pk not in holder.get()
    assert _matched(holder, OTHER) == {other.pk}  # the others still matched


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="TRUNCATE is PostgreSQL's")
def test_a_truncate_bumps_the_revision() -> None:
    record = _record(LEASE)
    holder = MatcherHolder()
    assert _matched(holder, LEASE) == {record.pk}
    before = current_revision()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's inserts checked first
        cursor.execute("TRUNCATE kb_errorrecord CASCADE")
    assert current_revision() > before
    assert _matched(holder, LEASE) == set()


def _served(server: Gunicorn, text: str, requests: int = 8) -> tuple[set[str], set[int]]:
    """Record ids matched over ``requests`` concurrent pastes, and the workers that served."""
    logged = len(server.worker_pids())
    with ThreadPoolExecutor(max_workers=requests) as pool:
        answers = list(
            pool.map(lambda _: json_post(server, "/api/match", {"text": text}), range(requests))
        )
    assert all(status == 200 for status, _h, _b in answers), answers
    ids = {m["record_id"] for _s, _h, body in answers for m in json.loads(body)["matches"]}
    return ids, set(server.worker_pids()[logged:])


SHELL_DELETE = """
import sys, django
django.setup()
from kb.records.models import ErrorRecord
print(ErrorRecord.objects.filter(pk=sys.argv[1]).delete())
"""


@pytest.mark.django_db(transaction=True)
def test_two_workers_stop_matching_a_record_deleted_in_a_shell(tmp_path: Path) -> None:
    """The probe of issue 22: two gunicorn workers that both matched a record, which is
    then deleted by ``QuerySet.delete()`` in a process of its own (a ``manage.py shell``
    with the servers' settings): each worker's next refresh stops matching it."""
    lease = _record(LEASE)
    other = _record(OTHER)
    with Gunicorn(
        workers=2, log_dir=tmp_path, KB_RATE_LIMIT_PER_MINUTE="0", KB_MATCHER_REFRESH_SECONDS="0"
    ) as server:
        loaded: set[int] = set()
        for _ in range(6):  # until both workers have answered with the record matched
            ids, workers = _served(server, LEASE)
            assert ids == {lease.pk}
            loaded |= workers
            if len(loaded) == 2:
                break
        assert len(loaded) == 2

        shell = subprocess.run(
            [sys.executable, "-c", SHELL_DELETE, lease.pk],
            cwd=ROOT,
            env=app_env(DEBUG="1"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shell.returncode == 0, shell.stderr[-2000:]
        assert not ErrorRecord.objects.filter(pk=lease.pk).exists()

        served: set[int] = set()
        for _ in range(6):  # on a busy machine one worker may take a whole round
            ids, workers = _served(server, LEASE)
            assert lease.pk not in ids
            served |= workers
            if served >= loaded:
                break
        assert served >= loaded  # every worker that had it loaded answered without it
        assert other.pk in _served(server, OTHER)[0]


@pytest.mark.django_db
def test_the_trigger_is_there_after_all_migrations() -> None:
    """A migration that rebuilds ``kb_errorrecord`` on SQLite drops its triggers: it must
    recreate this one (as the search triggers are), or this fails."""
    assert _triggers() == TRIGGERS[connection.vendor]


def _migrate(*args: str) -> None:
    call_command("migrate", *args, verbosity=0, interactive=False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("target", ["0019_move_loop_and_store_out", "zero"])
def test_migrating_back_and_forth_keeps_the_trigger(target: str) -> None:
    try:
        _migrate("kb", target)
        if target != "zero":  # at zero there is no table to hold a trigger
            assert _triggers() == set()
        _migrate()
        assert _triggers() == TRIGGERS[connection.vendor]
        record = _record(LEASE)
        before = current_revision()
        ErrorRecord.objects.filter(pk=record.pk).delete()
        assert current_revision() > before
    finally:
        _migrate()
