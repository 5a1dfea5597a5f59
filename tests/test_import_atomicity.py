"""Import atomicity (docs/reliability.md#r14-import-atomicity): an all-or-nothing import
with one bad line changes nothing, and a ``kill -9`` of a real import process leaves a
consistent database: SQLite's ``integrity_check`` is ok and only whole batches are visible
(each with its history and tag rows), or nothing at all in ``--atomic`` mode."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb.records.exporter import content_hash
from kb.records.models import ErrorRecord, RecordTag
from tests.factories import import_lines, make_line

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.django_db
def test_atomic_import_with_one_bad_line_in_the_middle_changes_nothing() -> None:
    import_lines(*[make_line() for _ in range(5)])
    stored = ErrorRecord.objects.first()
    assert stored is not None
    changed = json.loads(json.dumps(make_line()))
    changed["record"]["id"] = stored.pk
    changed["record"]["documentation"] = "would change"
    changed["record"]["contentChangedAt"] = "2030-01-01T00:00:00.000Z"
    before = (content_hash(), ErrorRecord.history.count(), RecordTag.objects.count())

    lines = [changed, *[make_line() for _ in range(30)], b"{broken\n", make_line()]
    report = import_lines(*lines, atomic=True, batch_size=7)

    assert report.rolled_back
    assert report.errors[0].line == 32
    assert (content_hash(), ErrorRecord.history.count(), RecordTag.objects.count()) == before


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["DATABASE_URL"] = f"sqlite:///{db}"
    return env


def _manage(db: Path, *args: str, stdout: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(db),
        stdout=stdout,
        stderr=subprocess.PIPE,
    )


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("kill") / "records.jsonl"
    count = 3000
    with path.open("w") as fh:
        for _ in range(count):
            fh.write(json.dumps(make_line()) + "\n")
    return path, count


def _copy(template: Path, target: Path) -> Path:
    src = sqlite3.connect(template)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def _count(db: Path, table: str) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _wait_until(predicate: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("the import did not get far enough in time")


def _check_consistent(db: Path) -> tuple[int, int]:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        records = con.execute("SELECT COUNT(*) FROM kb_errorrecord").fetchone()[0]
        history = con.execute("SELECT COUNT(*) FROM kb_historicalerrorrecord").fetchone()[0]
        untagged = con.execute(
            "SELECT COUNT(*) FROM kb_errorrecord r WHERE json_array_length(r.tags) > 0 "
            "AND NOT EXISTS (SELECT 1 FROM kb_recordtag t WHERE t.record_id = r.id)"
        ).fetchone()[0]
        assert history == records, "every stored record has its history row"
        assert untagged == 0, "every stored record has its tag rows"
        return records, history
    finally:
        con.close()


def test_kill_9_midway_keeps_whole_batches_and_a_rerun_completes(
    migrated_db: Path, big_file: tuple[Path, int], tmp_path: Path
) -> None:
    db = _copy(migrated_db, tmp_path / "db.sqlite3")
    path, count = big_file
    batch = 250
    proc = _manage(db, "import_records", str(path), "--batch-size", str(batch))
    _wait_until(lambda: _count(db, "kb_errorrecord") >= batch or proc.poll() is not None, 300)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)

    records, _history = _check_consistent(db)
    assert records % batch == 0, "no partially visible batch"
    assert 0 < records < count or proc.returncode == 0

    rerun = _manage(db, "import_records", str(path), "--json", stdout=subprocess.PIPE)
    out, err = rerun.communicate(timeout=600)
    summary = json.loads(out)
    assert (summary["created"], summary["unchanged"]) == (count - records, records), err
    assert _check_consistent(db)[0] == count


def test_kill_9_of_an_atomic_import_leaves_nothing(
    migrated_db: Path, big_file: tuple[Path, int], tmp_path: Path
) -> None:
    db = _copy(migrated_db, tmp_path / "db.sqlite3")
    path, _count_lines = big_file
    wal = Path(f"{db}-wal")
    proc = _manage(db, "import_records", str(path), "--atomic")
    # Midway: the transaction has written a good part of the file into the WAL.
    _wait_until(
        lambda: (wal.exists() and wal.stat().st_size > 4_000_000) or proc.poll() is not None, 300
    )
    assert proc.poll() is None, "the import finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)

    assert _check_consistent(db) == (0, 0)
    assert _count(db, "kb_recordtag") == 0
