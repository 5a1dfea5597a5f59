"""Curation end to end: edits survive re-imports as conflicts the curator settles,
history shows every edit and reverts it, and status decides what the matcher sees."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from kb.matching import match_text
from kb.models import ErrorRecord, Status
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.curation_support import change_url, form_data
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db

LOG = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 42 not found, "
    "backfill_state not initialized properly"
)


def _seeded(**overrides: object) -> tuple[ErrorRecord, dict]:
    line = make_line(**overrides)
    import_lines(line)
    return ErrorRecord.objects.get(pk=line["record"]["id"]), line


def _reimport(line: dict, **changes: object) -> object:
    line["record"].update(changes)
    line["record"]["contentChangedAt"] = "2026-11-30T00:00:00.000Z"
    return import_lines(line, source="update.jsonl")


# --- edit, then re-import ------------------------------------------------------------
def test_reimport_keeps_the_curators_edit_and_reports_the_conflict(
    curator_client: Client,
) -> None:
    record, line = _seeded()
    curator_client.post(change_url(record), form_data(record, solutions="Restart the actor"))

    report = _reimport(line, solutions=["Upstream advice"], documentation="New docs")

    assert report.conflicts == 1
    record.refresh_from_db()
    assert record.solutions == ["Restart the actor"]
    assert record.documentation == "New docs"  # not curated: the import updates it
    assert record.conflicts["solutions"]["incoming"] == ["Upstream advice"]
    assert record.conflicts["solutions"]["source"] == "update.jsonl"
    page = curator_client.get(change_url(record)).content.decode()
    assert "Upstream advice" in page
    assert "Take the import" in page
    assert "Curated: imports keep this value" in page


def test_curator_takes_the_imports_value(curator_client: Client) -> None:
    record, line = _seeded()
    curator_client.post(change_url(record), form_data(record, solutions="Mine"))
    _reimport(line, solutions=["Theirs"])
    record.refresh_from_db()

    response = curator_client.post(
        change_url(record), form_data(record, accept_incoming=["solutions"])
    )

    assert response.status_code == 302
    record.refresh_from_db()
    assert record.solutions == ["Theirs"]
    assert record.conflicts == {}
    assert "solutions" not in record.curated_fields
    _reimport(line, solutions=["Even newer"])
    record.refresh_from_db()
    assert record.solutions == ["Even newer"]  # the dataset owns the field again


def test_curator_keeps_their_value(curator_client: Client) -> None:
    record, line = _seeded()
    curator_client.post(change_url(record), form_data(record, solutions="Mine"))
    _reimport(line, solutions=["Theirs"])
    record.refresh_from_db()

    curator_client.post(change_url(record), form_data(record, keep_curated=["solutions"]))

    record.refresh_from_db()
    assert record.solutions == ["Mine"]
    assert record.conflicts == {}
    assert "solutions" in record.curated_fields


def test_conflicts_filter_finds_records_with_conflicts(curator_client: Client) -> None:
    record, line = _seeded()
    _seeded()
    curator_client.post(change_url(record), form_data(record, tags="mine"))
    _reimport(line, tags=["theirs"])
    page = curator_client.get(reverse("admin:kb_errorrecord_changelist") + "?conflicts=yes")
    assert "1 error record" in page.content.decode()


# --- history -------------------------------------------------------------------------
def test_history_shows_the_edit_and_a_revert_restores_it(curator_client: Client) -> None:
    record, _line = _seeded(solutions=["Original advice"])
    original = record.history.latest()
    curator_client.post(
        change_url(record),
        form_data(record, solutions="Wrong advice", change_reason="typo test"),
    )
    record.refresh_from_db()
    assert record.solutions == ["Wrong advice"]

    history = curator_client.get(reverse("admin:kb_errorrecord_history", args=[record.pk]))
    page = history.content.decode()
    assert "curator" in page
    assert "typo test" in page
    assert "import:-" in page

    revert_url = reverse(
        "admin:kb_errorrecord_simple_history", args=[record.pk, original.history_id]
    )
    form_page = curator_client.get(revert_url)
    assert form_page.status_code == 200
    old = original.instance
    response = curator_client.post(revert_url, form_data(old))

    assert response.status_code == 302
    record.refresh_from_db()
    assert record.solutions == ["Original advice"]
    latest = record.history.latest()
    assert latest.history_user.username == "curator"
    assert latest.history_change_reason == "admin: revert"
    assert record.history.count() == 3


# --- status and matching -------------------------------------------------------------
def test_a_retired_record_stops_matching(curator_client: Client) -> None:
    record, _line = _seeded()
    assert [m.record.pk for m in match_text(LOG).matches] == [record.pk]

    curator_client.post(
        reverse("admin:kb_errorrecord_changelist"),
        {"action": "retire", "_selected_action": [record.pk]},
    )

    assert match_text(LOG).matches == []
    record.refresh_from_db()
    assert record.status == Status.RETIRED


def test_a_draft_matches_once_published(curator_client: Client) -> None:
    record, _line = _seeded()
    ErrorRecord.objects.filter(pk=record.pk).update(status=Status.DRAFT)
    assert match_text(LOG).matches == []
    curator_client.post(
        reverse("admin:kb_errorrecord_changelist"),
        {"action": "publish", "_selected_action": [record.pk]},
    )
    assert [m.record.pk for m in match_text(LOG).matches] == [record.pk]


def test_an_edited_pattern_reaches_the_matcher(curator_client: Client) -> None:
    record, _line = _seeded()
    assert match_text(LOG).matches
    response = curator_client.post(
        change_url(record),
        form_data(
            record,
            error_message="Backfill progress for shard {} not found",
            message_pattern="Backfill progress for shard (.+?) not found",
        ),
    )
    assert response.status_code == 302
    assert match_text(LOG).matches == []
    hits = match_text("Backfill progress for shard 7 not found").matches
    assert [m.record.pk for m in hits] == [record.pk]


def test_a_revert_keeps_the_newest_provenance(curator_client: Client) -> None:
    record, line = _seeded(solutions=["Original advice"])
    original = record.history.latest()
    curator_client.post(change_url(record), form_data(record, solutions="Edited advice"))
    _reimport(line, analyzedSha="f" * 40, lineNumber=99, sourceCode="fn newest() {}")
    record.refresh_from_db()
    assert record.line_number == 99
    # History rows do not copy the snippet (kb.models: ``ErrorRecord.history``).
    assert not hasattr(original, "source_code")

    revert_url = reverse(
        "admin:kb_errorrecord_simple_history", args=[record.pk, original.history_id]
    )
    curator_client.post(revert_url, form_data(original.instance))

    record.refresh_from_db()
    assert record.solutions == ["Original advice"]
    assert record.line_number == 99
    assert record.analyzed_sha == "f" * 40
    assert record.source_code == "fn newest() {}"
