"""Backup and restore drill (docs/reliability.md#r21-backup): a backup taken while a writer runs
passes ``integrity_check`` and holds whole import batches only; restoring a backup gives back the
same row counts and content hash. On PostgreSQL the command falls back to ``dumpdata`` (pg_dump
is the real tool) and the same restore checks hold."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from kb.records.exporter import content_hash
from kb.records.importer import import_jsonl
from kb.records.models import ErrorRecord, RecordTag
from tests.factories import encode, import_lines, make_line

pytestmark = pytest.mark.django_db(transaction=True)


def _state() -> tuple[str, int, int, int]:
    return (
        content_hash(),
        ErrorRecord.objects.count(),
        ErrorRecord.history.count(),
        RecordTag.objects.count(),
    )


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_backup_while_a_writer_runs_is_sound_and_holds_whole_batches(tmp_path: Path) -> None:
    import_lines(*[make_line() for _ in range(50)])
    batch = 25
    stop = threading.Event()
    written = []

    def writer() -> None:
        try:
            while not stop.is_set():
                report = import_jsonl(
                    encode(*[make_line() for _ in range(batch)]), batch_size=batch
                )
                written.append(report.created)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while not written:  # the writer is under way
            stop.wait(0.01)
        target = tmp_path / "kb.backup.sqlite3"
        call_command("backup", str(target))
        after = tmp_path / "kb.vacuum.sqlite3"
        call_command("backup", str(after), "--method", "vacuum")
    finally:
        stop.set()
        thread.join()

    for path in (target, after):
        con = sqlite3.connect(path)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        records = con.execute("SELECT COUNT(*) FROM kb_errorrecord").fetchone()[0]
        history = con.execute("SELECT COUNT(*) FROM kb_historicalerrorrecord").fetchone()[0]
        con.close()
        assert records >= 50
        assert (records - 50) % batch == 0, "a backup never holds part of a batch"
        assert history == records


def test_restore_gives_back_the_same_counts_and_content_hash(tmp_path: Path) -> None:
    import_lines(*[make_line(tags=["alpha", f"t{i}"]) for i in range(40)])
    ErrorRecord.objects.filter(pk=ErrorRecord.objects.first().pk).update(disabled_reason="x")
    snapshot = _state()
    target = tmp_path / ("kb.backup.sqlite3" if connection.vendor == "sqlite" else "kb.json")
    call_command("backup", str(target))

    ErrorRecord.objects.filter(
        pk__in=list(ErrorRecord.objects.values_list("pk", flat=True)[:10])
    ).delete()
    import_lines(make_line())
    assert _state() != snapshot

    call_command("backup", str(target), "--restore")
    assert _state() == snapshot


def test_restore_refuses_a_missing_or_damaged_file(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("backup", str(tmp_path / "absent.sqlite3"), "--restore")
    if connection.vendor == "sqlite":
        broken = tmp_path / "broken.sqlite3"
        broken.write_bytes(b"SQLite format 3\x00" + b"\x00" * 5000)
        with pytest.raises((CommandError, sqlite3.DatabaseError)):
            call_command("backup", str(broken), "--restore")


def test_json_dump_restores_on_any_backend(tmp_path: Path) -> None:
    import_lines(*[make_line() for _ in range(10)])
    snapshot = _state()
    dump = tmp_path / "dump.json"
    call_command("dumpdata", exclude=["sessions", "admin.logentry"], output=str(dump), verbosity=0)
    assert json.loads(dump.read_text())
    ErrorRecord.objects.all().delete()
    call_command("backup", str(dump), "--restore")
    assert _state() == snapshot


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_backup_restores_into_a_fresh_instance_with_equal_counts_and_hash(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import_lines(*[make_line(tags=["beta"]) for _ in range(20)])
    snapshot = _state()
    backup = tmp_path / "kb.backup.sqlite3"
    call_command("backup", str(backup))

    fresh = tmp_path / "fresh.sqlite3"  # no migrate: the backup carries the schema
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{fresh}"}
    root = Path(__file__).resolve().parents[1]
    manage = [sys.executable, "manage.py"]
    subprocess.run(
        [*manage, "backup", str(backup), "--restore", "--skip-checks"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    probe = (
        "from kb.records.exporter import content_hash; "
        "from kb.records.models import ErrorRecord, RecordTag; "
        "print(content_hash(), ErrorRecord.objects.count(), ErrorRecord.history.count(), "
        "RecordTag.objects.count())"
    )
    out = (
        subprocess.run(
            [*manage, "shell", "-c", probe],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
        .split()
    )  # shell may print a banner first
    assert (out[0], *map(int, out[1:])) == snapshot
    con = sqlite3.connect(fresh)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
