"""``manage.py repack_sqlite``: an existing 4 KiB-page database gets the 16 KiB pages a new
one has, with every record as it was, and nothing changes while another connection is
open. Run as an operator runs it: a real process on a real file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import encode, make_line
from tests.test_import_atomicity import ROOT, _copy, _env


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(db),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _pragma(db: Path, name: str) -> object:
    con = sqlite3.connect(db)
    try:
        return con.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def old_db(migrated_db: Path, tmp_path: Path) -> Path:
    """A database as an older version created it (4 KiB pages), with records in it."""
    db = _copy(migrated_db, tmp_path / "old.sqlite3")
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("PRAGMA page_size=4096")
    con.execute("VACUUM")
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    lines = tmp_path / "records.jsonl"
    lines.write_bytes(b"".join(encode(*[make_line(tags=["x", "y"]) for _ in range(300)])))
    assert _run(db, "import_records", str(lines)).returncode == 0
    assert _pragma(db, "page_size") == 4096
    return db


def test_an_old_database_gets_16k_pages_and_keeps_every_record(
    old_db: Path, tmp_path: Path
) -> None:
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    assert _run(old_db, "export_records", str(before)).returncode == 0

    done = _run(old_db, "repack_sqlite")

    assert done.returncode == 0, done.stderr
    assert "4096 -> 16384" in done.stdout
    assert (_pragma(old_db, "page_size"), _pragma(old_db, "journal_mode")) == (16384, "wal")
    assert _pragma(old_db, "integrity_check") == "ok"
    assert _run(old_db, "export_records", str(after)).returncode == 0
    assert after.read_bytes() == before.read_bytes()
    assert len(before.read_bytes().splitlines()) == 300
    again = _run(old_db, "repack_sqlite")
    assert again.returncode == 0
    assert "nothing to do" in again.stdout


def test_an_open_connection_is_a_refusal_that_changes_nothing(old_db: Path) -> None:
    app = sqlite3.connect(old_db)  # the app, still running
    try:
        app.execute("SELECT count(*) FROM kb_errorrecord").fetchone()
        done = _run(old_db, "repack_sqlite")
    finally:
        app.close()
    assert done.returncode != 0
    assert "in use" in done.stderr
    assert (_pragma(old_db, "page_size"), _pragma(old_db, "journal_mode")) == (4096, "wal")
