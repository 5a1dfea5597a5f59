"""The importer: every good line stored, every bad line named, curators' edits kept."""

from __future__ import annotations

import json

import pytest

from kb.records.models import ErrorRecord, RecordTag, Status
from kb.records.services import save_curated
from tests.factories import encode, import_lines, make_line

pytestmark = pytest.mark.django_db


def test_bad_lines_are_named_and_good_lines_all_stored() -> None:
    good = [make_line() for _ in range(4)]
    missing_field = make_line()
    del missing_field["record"]["messagePattern"]
    wrong_type = make_line(lineNumber="eighty")
    lines = [
        good[0],
        b'{"record": {"id": "truncated", "repo": \n',
        good[1],
        missing_field,
        b"[1, 2, 3]\n",
        wrong_type,
        good[2],
        b"\n",
        good[3],
    ]
    report = import_lines(*lines)

    assert report.created == 4
    assert report.rejected == 5
    found = {(e.line, e.field) for e in report.errors}
    assert found == {(2, "-"), (4, "messagePattern"), (5, "-"), (6, "lineNumber"), (8, "-")}
    assert ErrorRecord.objects.count() == 4


@pytest.mark.parametrize(
    ("raw", "field", "fragment"),
    [
        (b'{"record": {}, "datasetVersion": NaN}\n', "-", "NaN"),
        (b'{"record": {"id": "a", "id": "b"}}\n', "-", "duplicate key"),
        (b'{"record": {"n": ' + b"1" * 5000 + b"}}\n", "-", "digits"),
        (b"\xff\xfe not utf-8\n", "-", "UTF-8"),
        (b'"just a string"\n', "-", "not an object"),
    ],
)
def test_malformed_json_is_rejected_with_a_reason(raw: bytes, field: str, fragment: str) -> None:
    report = import_lines(raw, make_line())
    assert report.created == 1
    assert report.rejected == 1
    assert report.errors[0].line == 1
    assert report.errors[0].field == field
    assert fragment in report.errors[0].message


def test_nul_and_lone_surrogate_are_rejected_by_field() -> None:
    nul = make_line(documentation="before\x00after")
    surrogate = json.dumps(make_line()).replace('"slug": "', '"slug": "\\ud800', 1)
    report = import_lines(nul, surrogate + "\n")
    assert report.rejected == 2
    assert [(e.line, e.field) for e in report.errors] == [(1, "documentation"), (2, "slug")]


def test_utf8_bom_on_the_first_line_is_accepted() -> None:
    line = b"\xef\xbb\xbf" + json.dumps(make_line()).encode() + b"\n"
    report = import_lines(line)
    assert (report.created, report.rejected) == (1, 0)


def test_duplicate_id_within_a_file_keeps_the_first() -> None:
    first = make_line(documentation="first")
    second = json.loads(json.dumps(first))
    second["record"]["documentation"] = "second"
    report = import_lines(first, second)
    assert report.created == 1
    assert report.errors[0].line == 2
    assert "duplicate id" in report.errors[0].message
    assert ErrorRecord.objects.get().documentation == "first"


def test_reimporting_the_same_file_writes_nothing() -> None:
    lines = [make_line() for _ in range(3)]
    import_lines(*lines)
    history_before = ErrorRecord.history.count()
    report = import_lines(*lines)
    assert (report.created, report.updated, report.unchanged) == (0, 0, 3)
    assert ErrorRecord.history.count() == history_before


def test_newer_content_updates_and_older_content_is_skipped() -> None:
    line = make_line()
    import_lines(line)
    newer = json.loads(json.dumps(line))
    newer["record"]["documentation"] = "rewritten"
    newer["record"]["contentChangedAt"] = "2026-11-30T00:00:00.000Z"
    assert import_lines(newer).updated == 1
    older = json.loads(json.dumps(line))
    older["record"]["documentation"] = "stale text"
    report = import_lines(older)
    assert (report.updated, report.stale) == (0, 1)
    assert ErrorRecord.objects.get().documentation == "rewritten"


def test_reimport_keeps_curator_edits_and_reports_the_conflict() -> None:
    line = make_line(solutions=["original step"])
    import_lines(line)
    record = ErrorRecord.objects.get()
    record.solutions = ["curated step one", "curated step two"]
    save_curated(record, changed_attrs=["solutions"])

    newer = json.loads(json.dumps(line))
    newer["record"]["solutions"] = ["imported step"]
    newer["record"]["documentation"] = "new documentation"
    newer["record"]["contentChangedAt"] = "2026-12-01T00:00:00.000Z"
    report = import_lines(newer)

    record.refresh_from_db()
    assert report.updated == 1
    assert report.conflicts == 1
    assert report.conflicted == [{"id": record.id, "field": "solutions"}]
    assert record.solutions == ["curated step one", "curated step two"]
    assert record.documentation == "new documentation"
    assert record.conflicts["solutions"]["incoming"] == ["imported step"]


def test_a_pattern_the_matcher_refuses_is_stored_disabled_with_its_reason() -> None:
    report = import_lines(make_line(messagePattern="(unclosed group"), make_line())
    assert (report.created, report.disabled, report.rejected) == (2, 1, 0)
    disabled = ErrorRecord.objects.exclude(disabled_reason="").get()
    assert disabled.disabled_reason
    assert ErrorRecord.objects.active().count() == 1


def test_tags_are_indexed_in_order() -> None:
    line = make_line(tags=["zeta", "alpha", "zeta-two"])
    import_lines(line)
    rows = RecordTag.objects.filter(record_id=line["record"]["id"]).order_by("position")
    assert [r.tag.name for r in rows] == ["zeta", "alpha", "zeta-two"]
    assert ErrorRecord.objects.with_tag("alpha").count() == 1


def test_dry_run_validates_without_writing() -> None:
    report = import_lines(make_line(), b"not json\n", dry_run=True)
    assert (report.created, report.rejected) == (1, 1)
    assert ErrorRecord.objects.count() == 0


def test_atomic_import_rolls_back_everything_on_one_bad_line() -> None:
    report = import_lines(make_line(), b"{broken\n", make_line(), atomic=True)
    assert report.rolled_back
    assert ErrorRecord.objects.count() == 0


def test_imported_records_are_published() -> None:
    import_lines(make_line())
    assert ErrorRecord.objects.get().status == Status.PUBLISHED


def test_every_line_of_a_long_file_is_counted(tmp_path: object) -> None:
    lines = [make_line() for _ in range(2500)]
    report = import_lines(*lines, batch_size=1000)
    assert report.created == 2500
    assert report.lines == 2500
    assert len(encode(*lines)) == 2500


# --- idempotency, duplicates, audit trail (docs/reliability.md#r16-idempotency, #r18-audit-trail)


def test_second_import_of_the_same_file_changes_no_row_and_keeps_the_content_hash() -> None:
    from kb.records.exporter import content_hash

    lines = [make_line(tags=["a", "b"]) for _ in range(30)]
    import_lines(*lines, batch_size=7)
    before = (
        content_hash(),
        ErrorRecord.history.count(),
        RecordTag.objects.count(),
        ErrorRecord.objects.values_list("updated_at", flat=True).order_by("-updated_at")[0],
    )
    report = import_lines(*lines, batch_size=7)
    after = (
        content_hash(),
        ErrorRecord.history.count(),
        RecordTag.objects.count(),
        ErrorRecord.objects.values_list("updated_at", flat=True).order_by("-updated_at")[0],
    )
    assert (report.created, report.updated, report.unchanged) == (0, 0, 30)
    assert after == before


def test_every_created_or_changed_record_gets_one_history_row_naming_the_file() -> None:
    lines = [make_line() for _ in range(4)]
    import_lines(*lines, source="first.jsonl")
    changed = json.loads(json.dumps(lines[0]))
    changed["record"]["documentation"] = "changed"
    changed["record"]["contentChangedAt"] = "2030-01-01T00:00:00.000Z"
    report = import_lines(changed, *lines[1:], make_line(), source="second.jsonl")

    assert (report.created, report.updated, report.unchanged) == (1, 1, 3)
    history = ErrorRecord.history.all()
    assert history.count() == 4 + 2
    first = history.filter(history_change_reason="import:first.jsonl")
    second = history.filter(history_change_reason="import:second.jsonl")
    assert set(first.values_list("history_type", flat=True)) == {"+"}
    assert sorted(second.values_list("history_type", flat=True)) == ["+", "~"]
    assert all(h.history_user_id is None and h.history_date for h in history)
    assert second.get(history_type="~").documentation == "changed"


def test_an_id_already_stored_is_updated_in_place_not_duplicated() -> None:
    line = make_line(tags=["old"])
    import_lines(line)
    newer = json.loads(json.dumps(line))
    newer["record"]["tags"] = ["new", "newer"]
    newer["record"]["contentChangedAt"] = "2030-01-01T00:00:00.000Z"
    assert import_lines(newer).updated == 1
    assert ErrorRecord.objects.count() == 1
    rows = RecordTag.objects.filter(record_id=line["record"]["id"]).order_by("position")
    assert [r.tag.name for r in rows] == ["new", "newer"]


def test_dry_run_reports_what_a_real_run_would_do() -> None:
    lines = [make_line(), make_line(messagePattern=r"(a)\1 again"), b"junk\n"]
    dry = import_lines(*lines, dry_run=True)
    real = import_lines(*lines)
    keys = ("created", "updated", "unchanged", "rejected", "disabled")
    assert [getattr(dry, k) for k in keys] == [getattr(real, k) for k in keys]


def test_json_summary_has_the_contract_keys(tmp_path: object) -> None:
    import io
    from pathlib import Path

    from django.core.management import call_command

    path = Path(str(tmp_path)) / "in.jsonl"
    path.write_bytes(b"".join(encode(make_line(), b"junk\n")))
    out = io.StringIO()
    call_command("import_records", str(path), "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert {"created", "updated", "unchanged", "rejected", "disabled", "errors"} <= set(summary)
    assert summary["errors"] == [
        {"line": 2, "field": "-", "message": summary["errors"][0]["message"]}
    ]


def test_a_duplicate_id_in_a_later_batch_is_rejected_naming_the_first_line() -> None:
    first = make_line(documentation="first")
    others = [make_line() for _ in range(5)]
    again = json.loads(json.dumps(first))
    again["record"]["documentation"] = "again"
    report = import_lines(first, *others, again, b"junk\n", batch_size=2)
    assert (report.created, report.rejected) == (6, 2)
    assert [(e.line, e.field) for e in report.errors] == [(7, "id"), (8, "-")]
    assert "first on line 1" in report.errors[0].message
    assert ErrorRecord.objects.get(pk=first["record"]["id"]).documentation == "first"


def test_progress_line_with_a_rate_is_shown_on_a_terminal_only(tmp_path: object) -> None:
    import io
    from pathlib import Path

    from django.core.management import call_command

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    path = Path(str(tmp_path)) / "in.jsonl"
    path.write_bytes(b"".join(encode(*[make_line() for _ in range(5)])))
    shown, piped = Terminal(), io.StringIO()
    call_command("import_records", str(path), "--batch-size", "2", stdout=shown)
    call_command("import_records", str(path), stdout=piped)
    assert "\r" in shown.getvalue()
    assert "lines/s" in shown.getvalue()
    assert "\r" not in piped.getvalue()
