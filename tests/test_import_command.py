"""``manage.py import_records`` as a user runs it: stdin, plain or gzip (told by content),
the summary naming the bad line; and the JSON lists stored as ``json.dumps`` writes them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from kb.records.importer import import_jsonl
from tests.factories import encode, make_line
from tests.test_import_atomicity import ROOT, _copy, _env


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the text SQLite stores")
@pytest.mark.django_db
def test_json_lists_are_stored_as_json_dumps_writes_them() -> None:
    tags = ["plain", 'quote " and \\ backslash', "ünïcödé ☃", "tab\tnew\nline", "\u2028"]
    line = make_line(tags=tags, solutions=["one", "two"], preventionTips=["\x7f"])
    import_jsonl(encode(line))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tags, solutions, prevention_tips FROM kb_errorrecord WHERE id = %s",
            [line["record"]["id"]],
        )
        stored = cursor.fetchone()
    assert stored == (json.dumps(tags), json.dumps(["one", "two"]), json.dumps(["\x7f"]))


def _run(db: Path, *args: str, data: bytes | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "manage.py", "import_records", *args, "--json"],
        input=data,
        cwd=ROOT,
        env=_env(db),
        capture_output=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_command_reads_stdin_and_files_gzipped_or_not(
    migrated_db: Path, tmp_path: Path
) -> None:
    db = _copy(migrated_db, tmp_path / "db.sqlite3")
    lines = [make_line() for _ in range(2600)]
    plain = b"".join(encode(*lines[:1500], b"junk\n", *lines[1500:2000]))
    first = _run(db, "-", data=plain)
    assert (first["created"], first["rejected"]) == (2000, 1)
    assert [(e["line"], e["field"]) for e in first["errors"]] == [(1501, "-")]
    second = _run(db, "-", data=gzip.compress(b"".join(encode(*lines[1990:2300]))))
    assert (second["created"], second["unchanged"]) == (300, 10)
    # The content decides, not the name: a gzip file named .jsonl is read as gzip.
    renamed = tmp_path / "records.jsonl"
    renamed.write_bytes(gzip.compress(b"".join(encode(*lines[2290:]))))
    third = _run(db, str(renamed))
    assert (third["created"], third["unchanged"], third["rejected"]) == (300, 10, 0)
