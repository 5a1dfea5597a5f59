"""``manage.py copy_database``: the SQLite -> PostgreSQL upgrade path (and SQLite -> SQLite,
which runs everywhere). The copy is checked the way the issue asks: ``export_records`` is
identical before and after, and so are curator history, users and the loop's tables."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connections
from django.utils import timezone

from kb.loop.models import Gap, GapWord, Proposal, UsageDay, Vote
from kb.records.models import ErrorRecord, HistoricalErrorRecord, ImportJob, Tag
from kb.records.search_index import search_index_missing
from tests.copy_support import curate, exported, fresh_postgres_database, history_rows, opened
from tests.curation_support import make_curator
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db(transaction=True)


def copy(source: str, target: str, *extra: str) -> dict:
    out = StringIO()
    call_command(
        "copy_database", "--source", source, "--target", target, "--json", *extra, stdout=out
    )
    return json.loads(out.getvalue())


@pytest.fixture
def curated() -> User:
    """The default (test) database with records, curator edits, history and loop rows."""
    lines = [make_line() for _ in range(6)]
    lines[3]["record"]["tags"] = ["alpha", "beta"]
    assert import_lines(*lines).rejected == 0
    curator = make_curator()
    records = list(ErrorRecord.objects.order_by("pk"))
    curate(records[:4], curator)
    record = records[0]
    seen = timezone.now()
    gap = Gap.objects.create(
        key="g1", template="connection refused on <n>", count=3, first_seen=seen, last_seen=seen
    )
    GapWord.objects.create(gap=gap, word="refused")
    Proposal.objects.create(
        record=record, field="solutions", text="Try turning it off", decided_by=curator
    )
    Vote.objects.create(record=record, verdict="fixed", voter="v1", day="2026-11-30", step=1)
    UsageDay.objects.create(record_id=record.pk, day="2026-11-30", hits=4, misses=1)
    ImportJob.objects.create(source="upload.jsonl", state="done", created_by=curator)
    return curator


def same_content(a: str, b: str) -> None:
    assert exported(a) == exported(b)
    assert history_rows(a) == history_rows(b)
    for model in (User, Group, Tag, Gap, GapWord, Proposal, Vote, UsageDay, ImportJob):
        rows_a = list(model.objects.using(a).order_by("pk").values())
        assert rows_a == list(model.objects.using(b).order_by("pk").values()), model
    users = User.objects.using(b)
    assert list(users.get(username="curator").groups.values_list("name", flat=True)) == ["Curators"]


def test_sqlite_to_sqlite_copies_records_history_users_and_the_loop(
    curated: User, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.sqlite3'}"
    summary = copy("default", target)
    assert summary["rows"]["kb.ErrorRecord"] == 6
    assert summary["rows"]["kb.HistoricalErrorRecord"] == HistoricalErrorRecord.objects.count()
    with opened("check", target) as alias:
        same_content("default", alias)
        # Timestamps are the stored ones, not the time of the copy.
        stamps = list(ErrorRecord.objects.order_by("pk").values_list("created_at", "updated_at"))
        copied = ErrorRecord.objects.using(alias).order_by("pk")
        assert list(copied.values_list("created_at", "updated_at")) == stamps
        # The copy serves: its search index holds every record, new rows get fresh ids.
        assert search_index_missing(connections[alias]) == []
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM kb_record_fts")
            assert cursor.fetchone()[0] == 6
        assert Tag.objects.using(alias).create(name="new-after-copy").pk > Tag.objects.count()


def test_the_copy_refuses_a_target_that_holds_records_unless_told_to_replace(
    curated: User, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.sqlite3'}"
    copy("default", target)
    with pytest.raises(CommandError, match="--replace"):
        copy("default", target)
    ErrorRecord.objects.filter(pk=ErrorRecord.objects.order_by("pk").first().pk).delete()
    copy("default", target, "--replace")
    with opened("check", target) as alias:
        same_content("default", alias)


def test_the_copy_refuses_an_unmigrated_source_and_the_same_database(tmp_path: Path) -> None:
    empty = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    with pytest.raises(CommandError, match="migrate it first"):
        copy(empty, f"sqlite:///{tmp_path / 'other.sqlite3'}")
    with pytest.raises(CommandError, match="same database"):
        copy(empty, empty)


def test_sqlite_to_postgresql_round_trip_keeps_the_export_identical(
    curated: User, tmp_path: Path
) -> None:
    sqlite = f"sqlite:///{tmp_path / 'single-host.sqlite3'}"
    copy("default", sqlite)  # the single SQLite host, as the upgrade starts from
    with fresh_postgres_database() as postgres:
        summary = copy(sqlite, postgres)
        assert summary["rows"]["kb.ErrorRecord"] == 6
        with opened("host", sqlite) as host, opened("pg", postgres) as pg:
            same_content(host, pg)
            same_content("default", pg)
            # Sequences moved past the copied ids: the next row gets a new one.
            newest = HistoricalErrorRecord.objects.using(pg).order_by("-history_id").first()
            tag = Tag.objects.using(pg).create(name="after-the-move")
            assert tag.pk > Tag.objects.using(host).order_by("-pk").first().pk
            assert newest is not None
