"""Parsing in a forked process (``kb.importer.ahead``): the same report and the same stored
rows as parsing in the importing process, the child's failures reach the caller, the child
never outlives the import, and no fork happens beside another thread."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError, connection

from kb.importer import ahead, import_jsonl
from kb.models import ErrorRecord
from tests.factories import clear_records, encode, fail_nth_write, make_line, stored_state
from tests.test_import_atomicity import ROOT, _copy, _env

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _children() -> set[int]:
    """This process's child processes, zombies included (``/proc``): the session's own
    servers among them, so compare with a set taken before."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    _state, parent = stat.read().rsplit(")", 1)[1].split()[:2]
            except OSError:
                continue
            if parent == me:
                found.add(int(entry))
    return found


def _pid_noting(lines: Iterable[bytes], where: Path) -> Iterator[bytes]:
    """``lines``, noting which process reads them (the parser runs where they are read)."""
    where.write_text(str(os.getpid()))
    yield from lines


def _import(lines: list[Any], where: Path, **kwargs: Any) -> Any:
    return import_jsonl(_pid_noting(encode(*lines), where), parse_ahead=True, **kwargs)


def _report(report: Any) -> dict[str, Any]:
    summary = report.as_json()
    summary.pop("seconds")
    return summary


def _files() -> tuple[list[Any], list[Any], list[Any], str]:
    """A first file with every kind of line, a second updating some records beside new
    ones, a third with nothing new; and the id of a record a curator edits in between."""
    # Non-ASCII goes out as ``\u`` escapes (the strict parse); the other lines take the
    # fast one.
    good = [make_line(tags=[f"t{n % 3}", "shared", *["ü"] * (n % 5 == 0)]) for n in range(30)]
    first = [
        *good[:12],
        b'{"record": {"id": "truncated"\n',  # bad JSON
        make_line(severity=7),  # a field of the wrong type
        json.loads(json.dumps(good[3])),  # the id of a line of an earlier batch
        make_line(messagePattern="(a)\\1"),  # refused by the matcher: stored disabled
        make_line(errorMessage="café ☃"),  # escaped by ``encode``: the strict path
        b"\n",
        *good[12:20],
        json.loads(json.dumps(good[15])),  # a duplicate in the same batch as its first
    ]
    changed = json.loads(json.dumps(good[:4]))
    for line in changed:
        line["record"]["solutions"] = ["new advice"]
        line["record"]["tags"] = ["retagged"]
        line["record"]["contentChangedAt"] = "2031-01-01T00:00:00.000Z"
    return first, [*changed, *good[20:]], [*changed, *good[4:]], good[0]["record"]["id"]


def _session(run: Any, files: tuple[list[Any], list[Any], list[Any], str]) -> list[Any]:
    """The three files imported in turn (a curator's edit after the first): each report,
    then what is stored."""
    first, second, third, curated_id = files
    reports = [run(first, batch_size=4)]
    curated = ErrorRecord.objects.get(pk=curated_id)
    curated.solutions = ["a curator's fix"]
    curated.curated_fields = ["solutions"]
    curated.save()
    reports.append(run(second, batch_size=5))
    reports.append(run(third, batch_size=6))
    return [*map(_report, reports), stored_state()]


@pytest.mark.django_db
def test_parsing_ahead_reports_and_stores_what_parsing_here_does(tmp_path: Path) -> None:
    where, files, before = tmp_path / "pid", _files(), _children()
    here = _session(lambda lines, **kw: import_jsonl(encode(*lines), **kw), files)
    clear_records()
    forked = _session(lambda lines, **kw: _import(lines, where, **kw), files)
    assert int(where.read_text()) != os.getpid()  # the lines were read in the child
    assert _children() == before  # each import's child reaped
    assert forked == here
    first = forked[0]
    assert (first["created"], first["rejected"], first["disabled"]) == (22, 5, 1)
    assert [(e["line"], e["field"]) for e in first["errors"]] == [
        (13, "-"),
        (14, "severity"),
        (15, "id"),
        (18, "-"),
        (27, "id"),
    ]
    assert forked[1]["conflicts"] == 1
    assert forked[2]["created"] == 0


@pytest.mark.django_db
def test_a_read_error_in_the_child_reaches_the_caller_as_itself(tmp_path: Path) -> None:
    def lines() -> Iterator[bytes]:
        yield from encode(*[make_line() for _ in range(9)])
        raise OSError("unreadable")

    before = _children()
    with pytest.raises(OSError, match="unreadable") as raised:
        import_jsonl(_pid_noting(lines(), tmp_path / "pid"), batch_size=2, parse_ahead=True)
    assert int((tmp_path / "pid").read_text()) != os.getpid()
    assert any("parser process" in note for note in raised.value.__notes__)
    assert _children() == before


@pytest.mark.django_db
def test_a_child_that_dies_is_an_error_naming_its_exit_code() -> None:
    def lines() -> Iterator[bytes]:
        yield from encode(*[make_line() for _ in range(3)])
        os._exit(3)

    before = _children()
    with pytest.raises(ahead.ParserFailed, match="exit code 3"):
        import_jsonl(lines(), batch_size=2, parse_ahead=True)
    assert _children() == before


@pytest.mark.django_db(transaction=True)
def test_a_writer_failure_stops_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    fail_nth_write(monkeypatch, 3)
    lines = encode(*[make_line() for _ in range(5000)])
    before = _children()
    with pytest.raises(DatabaseError):
        import_jsonl(lines, batch_size=3, commit_records=3, parse_ahead=True)
    assert _children() == before
    # First batch (``FIRST_BATCH`` lines at most, here 3) and the second committed alone.
    assert ErrorRecord.objects.count() == 6


@pytest.mark.django_db
def test_no_fork_beside_another_thread(tmp_path: Path) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not ahead.can_fork()
        report = _import([make_line() for _ in range(5)], tmp_path / "pid", batch_size=2)
    finally:
        stop.set()
        other.join()
    assert report.created == 5
    assert int((tmp_path / "pid").read_text()) == os.getpid()  # parsed here


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


def test_the_command_reads_stdin_in_its_parser_gzipped_or_not(
    migrated_db: Path, tmp_path: Path
) -> None:
    """``manage.py import_records -`` as a user runs it (parsing ahead by default): the
    child reads stdin, plain or gzip, and the summary names the bad line."""
    db = _copy(migrated_db, tmp_path / "db.sqlite3")
    lines = [make_line() for _ in range(2600)]
    plain = b"".join(encode(*lines[:1500], b"junk\n", *lines[1500:2000]))
    zipped = gzip.compress(b"".join(encode(*lines[1990:])))
    summaries = []
    for data in (plain, zipped):
        done = subprocess.run(
            [sys.executable, "manage.py", "import_records", "-", "--json"],
            input=data,
            cwd=ROOT,
            env=_env(db),
            capture_output=True,
            timeout=300,
            check=True,
        )
        summaries.append(json.loads(done.stdout))
    first, second = summaries
    assert (first["created"], first["rejected"]) == (2000, 1)
    assert [(e["line"], e["field"]) for e in first["errors"]] == [(1501, "-")]
    assert (second["created"], second["unchanged"]) == (600, 10)
