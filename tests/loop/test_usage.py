"""Usage signals (`kb.loop.usage`): counted in memory per paste, written in one batch when
due (by an injected clock), added to what is stored, never failing a paste; the paste view
and the API count through them without writing per paste."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb.loop import usage
from kb.loop.models import UsageDay
from tests.factories import make_record

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Clock:
    settings.KB_USAGE_FLUSH_SECONDS = 30
    fake = Clock()
    monkeypatch.setattr(usage, "buffer", usage.UsageBuffer(clock=fake))
    return fake


def stored() -> dict[tuple[str, str], tuple[int, int]]:
    return {(u.record_id, u.day.isoformat()): (u.hits, u.misses) for u in UsageDay.objects.all()}


def test_counts_wait_for_the_interval_then_go_in_one_flush(clock: Clock) -> None:
    buf = usage.buffer
    buf.count({"a", "b"})
    buf.count({"a"})
    buf.count(set())
    assert not buf.due()
    clock.now = T0 + timedelta(seconds=29)
    assert not buf.due()
    assert not UsageDay.objects.exists()
    clock.now = T0 + timedelta(seconds=30)
    assert buf.due()
    assert buf.flush() == 3
    assert stored() == {
        ("a", "2026-03-01"): (2, 0),
        ("b", "2026-03-01"): (1, 0),
        ("", "2026-03-01"): (0, 1),
    }
    assert len(buf) == 0
    assert not buf.due()


def test_a_flush_adds_to_what_is_stored_and_days_are_kept_apart(clock: Clock) -> None:
    buf = usage.buffer
    buf.count({"a"})
    buf.flush()
    buf.count({"a"})
    buf.count({"a"}, now=T0 + timedelta(days=1))
    buf.flush()
    assert stored() == {("a", "2026-03-01"): (2, 0), ("a", "2026-03-02"): (1, 0)}


def test_a_full_buffer_is_due_whatever_its_age(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(usage, "MAX_KEYS", 3)
    for rid in "abcd":
        usage.buffer.count({rid})
    assert usage.buffer.due()


def test_a_failed_flush_keeps_the_counts_for_the_next(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(rows: object) -> None:
        raise DatabaseError("database is locked")

    usage.buffer.count({"a"})
    with monkeypatch.context() as patched:
        patched.setattr(usage, "_upsert", broken)
        assert usage.buffer.flush() == 0
    assert len(usage.buffer) == 1
    assert usage.buffer.flush() == 1
    assert stored() == {("a", "2026-03-01"): (1, 0)}


def test_after_a_failed_flush_pastes_do_not_retry_until_the_next_interval(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush that failed (the write lock held by an import) waits a whole interval:
    retrying on every paste would make each one wait for that lock again."""
    attempts: list[int] = []

    def broken(rows: object) -> None:
        attempts.append(1)
        raise DatabaseError("database is locked")

    monkeypatch.setattr(usage, "_upsert", broken)
    usage.buffer.count({"a"})
    clock.now = T0 + timedelta(seconds=31)
    assert usage.buffer.due()
    usage.buffer.flush()
    assert attempts == [1]
    for seconds in (32, 40, 60):
        clock.now = T0 + timedelta(seconds=seconds)
        usage.buffer.count({"a"})
        assert not usage.buffer.due()
    clock.now = T0 + timedelta(seconds=62)
    assert usage.buffer.due()


def test_a_flush_gives_up_on_a_held_write_lock_quickly(
    clock: Clock, transactional_db: None
) -> None:
    """On SQLite the flush waits only briefly for the write lock and keeps its counts."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write lock")
    import sqlite3

    usage.buffer.count({"a"})
    holder = sqlite3.connect(connection.settings_dict["NAME"], timeout=1)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout")
            before = cursor.fetchone()[0]
        assert usage.buffer.flush() == 0
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] == before
    finally:
        holder.rollback()
        holder.close()
    assert len(usage.buffer) == 1
    assert usage.buffer.flush() == 1


def test_count_match_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    usage.count_match(object())  # not a result at all: logged, not raised


def _paste(client: Client, text: str) -> None:
    assert client.post("/match/", {"text": text}).status_code == 200


def test_pastes_count_hits_and_misses_without_a_write_until_due(clock: Clock) -> None:
    record = make_record()
    client = Client()
    hit = "ERROR Backfill progress for vnode 42 not found, backfill_state not initialized properly"
    _paste(client, hit)  # the first paste builds the matcher
    with CaptureQueriesContext(connection) as queries:
        _paste(client, hit)
        _paste(client, "nothing anyone has ever seen before, truly")
    assert not [q for q in queries.captured_queries if "kb_usageday" in q["sql"]]
    assert (
        client.post("/api/match", {"text": hit}, content_type="application/json").status_code == 200
    )
    clock.now = T0 + timedelta(seconds=31)
    _paste(client, hit)  # due: this request writes the buffer
    assert stored() == {(record.pk, "2026-03-01"): (4, 0), ("", "2026-03-01"): (0, 1)}


def test_usage_off_counts_nothing(clock: Clock, settings: Any) -> None:
    settings.KB_USAGE_ENABLED = False
    make_record()
    _paste(
        Client(),
        "ERROR Backfill progress for vnode 42 not found, backfill_state not initialized properly",
    )
    assert len(usage.buffer) == 0
