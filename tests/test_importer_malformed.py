"""Every way a line can be broken (docs/reliability.md#r15-malformed-input) and every way a
pattern can be refused (docs/reliability.md#r13-pattern-admission): each named by line and
field with a reason, the good lines around it all stored, no traceback, and the same
outcome on SQLite and PostgreSQL (NUL is refused at validation because PostgreSQL text
cannot hold it)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.records.importer import import_jsonl, read_lines
from kb.records.models import ErrorRecord
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]


def _with_record(transform: object) -> bytes:
    """A good line's JSON text run through ``transform`` (a str -> str function)."""
    text = json.dumps(make_line())
    return transform(text).encode("utf-8", "surrogatepass") + b"\n"


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


MALFORMED = {
    "invalid utf-8": (b'{"record": "\xff\xfe"}\n', "-", "UTF-8"),
    "utf-8 encoded surrogate": (b'{"record": "\xed\xa0\x80"}\n', "-", "UTF-8"),
    "bom on a later line": (
        b"\xef\xbb\xbf" + json.dumps(make_line()).encode() + b"\n",
        "-",
        "JSON",
    ),
    "blank line": (b"   \n", "-", "blank"),
    "non-object line": (b"[1, 2]\n", "-", "not an object"),
    "string line": (b'"text"\n', "-", "not an object"),
    "null line": (b"null\n", "-", "not an object"),
    "truncated json": (b'{"record": {"id": "x", \n', "-", "invalid JSON"),
    "NaN": (b'{"record": {}, "n": NaN}\n', "-", "NaN"),
    "Infinity": (b'{"record": {}, "n": Infinity}\n', "-", "Infinity"),
    "-Infinity": (b'{"record": {}, "n": -Infinity}\n', "-", "Infinity"),
    "duplicate top-level key": (b'{"record": {}, "record": {}}\n', "-", "duplicate key"),
    "duplicate record key": (
        _with_record(lambda t: t.replace('"slug": ', '"slug": "x", "slug": ', 1)),
        "-",
        "duplicate key",
    ),
    "4301-digit integer": (b'{"record": {}, "n": ' + b"9" * 4301 + b"}\n", "-", "digits"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000 + b"\n", "-", "JSON"),
    "escaped lone surrogate": (
        _with_record(lambda t: t.replace('"slug": "', '"slug": "\\udc00', 1)),
        "slug",
        "surrogate",
    ),
    "escaped NUL in a text field": (
        _with_record(lambda t: t.replace('"errorMessage": "', '"errorMessage": "\\u0000', 1)),
        "errorMessage",
        "NUL",
    ),
    "raw NUL byte in a string": (
        _with_record(lambda t: t.replace('"slug": "', '"slug": "\x00', 1)),
        "-",
        "invalid JSON",
    ),
    "NUL in a tag": (
        _with_record(lambda t: t.replace('"tags": [', '"tags": ["a\\u0000b", ', 1)),
        "tags",
        "NUL",
    ),
    "NUL in an unknown key's value": (
        _with_record(lambda t: t.replace('"slug": ', '"futureKey": {"k": "\\u0000"}, "slug": ', 1)),
        "futureKey",
        "NUL",
    ),
    "NUL in an unknown key's name": (
        _with_record(lambda t: t.replace('"slug": ', '"bad\\u0000key": 1, "slug": ', 1)),
        "bad\x00key",
        "NUL",
    ),
    "upper-case escaped surrogate in an unknown key's list": (
        _with_record(lambda t: t.replace('"slug": ', '"futureKey": ["\\uD83D"], "slug": ', 1)),
        "futureKey",
        "surrogate",
    ),
    "overflowing float (no escape on the line) in an unknown key": (
        _with_record(lambda t: t.replace('"slug": ', '"futureKey": {"k": 1e999}, "slug": ', 1)),
        "futureKey",
        "Infinity",
    ),
    "integer out of the column's range": (
        _with_record(lambda t: t.replace('"httpStatus": null', '"httpStatus": 40000', 1)),
        "httpStatus",
        "out of range",
    ),
    "line number past 32 bits": (
        _with_record(lambda t: t.replace('"lineNumber": 80', '"lineNumber": 4294967296', 1)),
        "lineNumber",
        "out of range",
    ),
    "boolean for an integer": (
        _with_record(lambda t: t.replace('"lineNumber": 80', '"lineNumber": true', 1)),
        "lineNumber",
        "integer",
    ),
    "tag longer than the tag column": (
        _with_record(lambda t: t.replace('"tags": [', '"tags": ["' + "t" * 101 + '", ', 1)),
        "tags",
        "longer",
    ),
    "missing record": (b'{"datasetVersion": "v1"}\n', "record", "missing"),
    "bad timestamp": (
        _with_record(
            lambda t: t.replace('"analyzedAt": "', '"analyzedAt": "yesterday', 1).replace(
                '"analyzedAt": "yesterday', '"analyzedAt": "yesterday", "x_": "', 1
            )
        ),
        "analyzedAt",
        "ISO 8601",
    ),
    # valid ISO 8601, but year 1 at UTC+1 is before datetime.min once made UTC
    "timestamp before the first representable instant": (
        _with_record(
            lambda t: re.sub(
                r'"contentChangedAt": "[^"]*"',
                '"contentChangedAt": "0001-01-01T00:00:00+01:00"',
                t,
                count=1,
            )
        ),
        "contentChangedAt",
        "out of range",
    ),
    "timestamp after the last representable instant": (
        _with_record(
            lambda t: re.sub(
                r'"analyzedAt": "[^"]*"', '"analyzedAt": "9999-12-31T23:59:59-01:00"', t, count=1
            )
        ),
        "analyzedAt",
        "out of range",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_line_is_rejected_by_number_and_field_and_neighbours_are_stored(
    case: str,
) -> None:
    raw, field, fragment = MALFORMED[case]
    before, after = make_line(), make_line()
    report = import_lines(before, raw, after)

    assert (report.created, report.rejected) == (2, 1), report.errors
    error = report.errors[0]
    assert error.line == 2
    assert error.field == field
    assert fragment in error.message
    assert (
        ErrorRecord.objects.filter(pk__in=[before["record"]["id"], after["record"]["id"]]).count()
        == 2
    )


def test_bom_on_the_first_line_is_not_an_error() -> None:
    report = import_lines(b"\xef\xbb\xbf" + json.dumps(make_line()).encode() + b"\n")
    assert (report.created, report.rejected) == (1, 0)


def test_line_longer_than_the_limit_is_skipped_without_reading_it_whole() -> None:
    good = json.dumps(make_line()).encode() + b"\n"
    stream = io.BytesIO(
        good + b'{"x": "' + b"y" * 300_000 + b'"}\n' + good.replace(b"test", b"tost")
    )
    report = import_jsonl(read_lines(stream, max_bytes=100_000))
    assert (report.created, report.rejected) == (2, 1)
    assert report.errors[0].line == 2
    assert "longer than" in report.errors[0].message


def test_last_line_without_newline_is_imported() -> None:
    line = json.dumps(make_line()).encode()
    assert import_jsonl(read_lines(io.BytesIO(line))).created == 1


def test_command_reports_bad_lines_in_json_and_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b"".join(raw for raw, _f, _m in MALFORMED.values()) + _raw(json.dumps(make_line()))
    )
    out = io.StringIO()
    call_command("import_records", str(path), "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["created"] == 1
    assert summary["rejected"] == len(MALFORMED)
    assert {e["line"] for e in summary["errors"]} == set(range(1, len(MALFORMED) + 1))
    assert all(set(e) == {"line", "field", "message"} for e in summary["errors"])


def test_missing_file_exits_non_zero(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "import_records", str(tmp_path / "nope.jsonl"), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr


# --- pattern admission (docs/reliability.md#r13-pattern-admission) ---------------------

REFUSED_PATTERNS = {
    "backreference": r"value (\w+) repeated \1 twice",
    "lookahead": r"connection (?=refused) by peer host",
    "lookbehind": r"(?<!not )found a broken pipe here",
    "counted repeat above the limit": r"buffer overflow x{1001} in reader",
    "empty-matching regex": r"(timeout)?\s*",
    "placeholders only": "(.+?) (.+?)",
    "unbalanced group": "(unclosed group of text",
}


def test_every_refused_pattern_is_stored_disabled_with_line_and_engine_message() -> None:
    lines = [make_line(messagePattern=p) for p in REFUSED_PATTERNS.values()]
    good = make_line()
    report = import_lines(*lines, good)

    assert report.rejected == 0
    assert report.created == len(lines) + 1
    assert report.disabled == len(lines)
    by_line = {d["line"]: d for d in report.disabled_records}
    assert sorted(by_line) == list(range(1, len(lines) + 1))
    for number, line in enumerate(lines, start=1):
        record = ErrorRecord.objects.get(pk=line["record"]["id"])
        assert record.disabled_reason
        assert by_line[number]["reason"] == record.disabled_reason
        assert not record.is_active
    assert ErrorRecord.objects.get(pk=good["record"]["id"]).is_active


def test_unicode_escape_pattern_is_either_admitted_by_an_engine_or_disabled_with_a_reason() -> None:
    line = make_line(messagePattern=r"caf\u00e9 closed the socket unexpectedly")
    report = import_lines(line)
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    assert report.created == 1
    if record.disabled_reason:
        assert report.disabled_records[0]["line"] == 1
    else:
        assert record.pattern_engine


def test_command_prints_disabled_records_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "patterns.jsonl"
    path.write_bytes(_raw(json.dumps(make_line(messagePattern=r"(a)\1 twice over")) + "\n"))
    out = io.StringIO()
    call_command("import_records", str(path), stdout=out)
    assert "line 1: disabled" in out.getvalue()


def _test_database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def test_memory_stays_bounded_for_a_huge_line_and_many_records(tmp_path: Path) -> None:
    """The largest case of docs/reliability.md#r15-malformed-input, proportionally: one line
    far past the line limit plus thousands of records, imported by a real process whose
    peak memory must stay under the bar's bound (the benchmark imports the larger files)."""
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"record": "' + b"x" * 60_000_000 + b'"}\n')
        for _ in range(5000):
            fh.write(json.dumps(make_line()).encode() + b"\n")
    code = (
        "import os, sys, django, json\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'kb.settings'); django.setup()\n"
        "from kb.records.importer import import_jsonl, read_lines\n"
        "r = import_jsonl(read_lines(open(sys.argv[1], 'rb')), dry_run=True)\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent.
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print(json.dumps([r.created, r.rejected, int(hwm.split()[1]) // 1024]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": _test_database_url()},
        capture_output=True,
        text=True,
        check=True,
    )
    created, rejected, peak_mb = json.loads(result.stdout.strip().splitlines()[-1])
    assert (created, rejected) == (5000, 1)
    assert peak_mb < 200, f"peak RSS {peak_mb} MB"
