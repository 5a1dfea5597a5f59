"""A record's release history in the dataset's format: imported, exported, kept.

Older files carry none of these keys; they still import, export as they came, and a
re-import of them keeps the history a learn wrote. A curator's retired wordings survive
re-imports like any curated field.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.records.models import ErrorRecord
from kb.records.services import save_curated
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db

COMMIT = {"sha": "a" * 40, "subject": "Reword the error", "date": "2021-03-01T10:00:00Z"}
HISTORY = {
    "introducedBy": COMMIT,
    "lastChangedBy": {**COMMIT, "sha": "b" * 40},
    "wordings": [
        {
            "message": "No row was found for one()",
            "pattern": r"No row was found for one\(\)",
            "firstRelease": "1.3.0",
            "lastRelease": "1.3.24",
            "introducedBy": COMMIT,
            "lastChangedBy": None,
        },
        {
            "message": "No row was found when one was required",
            "pattern": "No row was found when one was required",
            "firstRelease": "1.4.0",
            "lastRelease": "2.0.1",
        },
    ],
    "locations": [
        {"path": "lib/sqlalchemy/orm/query.py", "line": 2889, "firstRelease": "1.3.0",
         "lastRelease": "1.3.24"},
    ],
}  # fmt: skip


ID = "historytest0001"


def _with_history(**overrides: object) -> dict:
    fields = {
        "id": ID,
        "slug": "history-test",
        "firstRelease": "1.3.0",
        "lastRelease": "2.0.1",
        "removedIn": None,
        "releaseHistory": HISTORY,
    }
    return make_line(**{**fields, **overrides})


def _export(tmp_path: Path) -> list[dict]:
    target = tmp_path / "out.jsonl"
    call_command("export_records", str(target), stderr=io.StringIO())
    return [json.loads(line) for line in target.read_text().splitlines()]


def test_history_is_stored_exported_and_reimported_unchanged(tmp_path: Path) -> None:
    line = _with_history()
    assert import_lines(line).created == 1
    record = ErrorRecord.objects.get()
    assert (record.first_release, record.last_release) == ("1.3.0", "2.0.1")
    assert record.release_history["wordings"][0]["lastRelease"] == "1.3.24"

    (exported,) = _export(tmp_path)
    assert exported["record"]["releaseHistory"] == HISTORY
    assert exported["record"]["firstRelease"] == "1.3.0"
    assert "removedIn" not in exported["record"]  # empty optional fields are left out
    report = import_lines(exported)
    assert (report.created, report.updated, report.unchanged) == (0, 0, 1)


def test_an_older_file_without_history_imports_and_exports_as_it_came(tmp_path: Path) -> None:
    line = make_line()
    import_lines(line)
    (exported,) = _export(tmp_path)
    assert exported == line


def test_reimporting_an_older_file_keeps_the_learned_history() -> None:
    import_lines(_with_history())
    report = import_lines(
        make_line(id=ID, slug="history-test")
    )  # the same record, from a file without history
    assert (report.updated, report.unchanged) == (0, 1)
    record = ErrorRecord.objects.get()
    assert record.first_release == "1.3.0"
    assert record.release_history == HISTORY


def test_an_older_file_with_other_content_updates_it_and_keeps_the_history() -> None:
    import_lines(_with_history())
    newer = make_line(
        id=ID,
        slug="history-test",
        documentation="new words",
        contentChangedAt="2026-12-01T00:00:00.000Z",
    )
    assert import_lines(newer).updated == 1
    record = ErrorRecord.objects.get()
    assert record.documentation == "new words"
    assert record.release_history == HISTORY


def test_a_newer_history_replaces_the_stored_one() -> None:
    import_lines(_with_history())
    later = _with_history(lastRelease="2.1.0", removedIn="2.2.0")
    assert import_lines(later).updated == 1
    record = ErrorRecord.objects.get()
    assert (record.last_release, record.removed_in) == ("2.1.0", "2.2.0")


def test_retired_wordings_are_a_curators_and_survive_reimport() -> None:
    import_lines(_with_history())
    record = ErrorRecord.objects.get()
    record.retired_wordings = [r"No row was found for one\(\)"]
    save_curated(record, changed_attrs=["retired_wordings"])
    report = import_lines(_with_history(retiredWordings=[]))
    record.refresh_from_db()
    assert record.retired_wordings == [r"No row was found for one\(\)"]
    assert report.conflicts == 1


@pytest.mark.parametrize(
    ("history", "fragment"),
    [
        ("text", "must be an object or null"),
        ({"wordings": "x"}, "wordings must be a list"),
        ({"wordings": [{"message": "m"}]}, "wordings[0].pattern is missing"),
        ({"wordings": [{"message": "m", "pattern": "  "}]}, "wordings[0].pattern must not"),
        ({"wordings": [{"message": "m", "pattern": "p", "firstRelease": 3}]},
         "wordings[0].firstRelease must be a string"),
        ({"introducedBy": {"sha": "a"}}, "introducedBy.subject is missing"),
        ({"locations": [{"path": "a.py", "line": -1}]}, "locations[0].line must be a line"),
        ({"locations": [{"path": "a.py", "line": True}]}, "locations[0].line must be a line"),
        ({"wordings": [{"message": "m", "pattern": "p"}] * 501}, "more than 500 items"),
        ({"note": "a\x00b"}, "NUL"),
    ],
)  # fmt: skip
def test_a_bad_history_is_rejected_naming_the_field_and_the_rest_goes_in(
    history: object, fragment: str
) -> None:
    report = import_lines(make_line(releaseHistory=history), make_line())
    assert report.created == 1
    (error,) = report.errors
    assert (error.line, error.field) == (1, "releaseHistory")
    assert fragment in error.message
