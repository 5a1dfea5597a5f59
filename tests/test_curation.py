"""Curation: the rules of ``kb.records.services.save_curator_edit`` on their own (curated fields,
conflicts recorded and settled, what a revert keeps, the history row), then end to end
through the admin: edits survive re-imports as conflicts the curator settles, history
shows every edit and reverts it, and status decides what the matcher sees."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from kb.matching.holder import match_text
from kb.records.models import ErrorRecord, RecordTag, Status, current_revision
from kb.records.services import CuratorEdit, add_tags, save_curator_edit, set_status
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


# --- the service, without the admin ------------------------------------------------
def _edit(record: ErrorRecord, user: User, changed: list[str], **kwargs: Any) -> CuratorEdit:
    return save_curator_edit(record=record, changed_fields=changed, user=user, **kwargs)


def _curated_conflict(user: User) -> tuple[ErrorRecord, dict]:
    """A record whose solutions a curator owns, and a newer import that disagrees."""
    record, line = _seeded()
    record.solutions = ["Mine"]
    _edit(record, user, ["solutions"])
    _reimport(line, solutions=["Theirs"], tags=["theirs"])
    return ErrorRecord.objects.get(pk=record.pk), line


def test_an_edit_curates_its_fields_bumps_the_revision_and_names_the_curator(
    curator: User,
) -> None:
    record, _line = _seeded()
    before = current_revision()
    record.solutions = ["Restart the actor"]
    record.status = Status.DRAFT

    edit = _edit(record, curator, ["solutions"], reason="clearer advice")

    assert edit.changed == ["solutions", "status"]
    record.refresh_from_db()
    assert record.curated_fields == ["solutions"]  # the status is not a dataset field
    assert record.revision > before
    latest = record.history.latest()
    assert latest.history_user == curator
    assert latest.history_change_reason == "clearer advice"


def test_what_differs_from_the_stored_row_counts_even_if_the_form_missed_it(
    curator: User,
) -> None:
    record, _line = _seeded()
    record.documentation = "Written by hand"
    assert _edit(record, curator, []).changed == ["documentation"]
    assert ErrorRecord.objects.get(pk=record.pk).curated_fields == ["documentation"]


def test_an_unchanged_save_curates_nothing(curator: User) -> None:
    record, _line = _seeded()
    edit = _edit(record, curator, ["accept_collisions", "change_reason"])
    assert edit.changed == []
    assert edit.record.curated_fields == []
    assert record.history.latest().history_change_reason == "admin: edit"


def test_a_curator_never_writes_provenance_or_the_curated_list(curator: User) -> None:
    record, _line = _seeded()
    stored_line = record.line_number
    record.line_number = 1
    record.curated_fields = ["repo"]
    record.conflicts = {"repo": {"incoming": "x"}}
    _edit(record, curator, ["line_number"])
    record.refresh_from_db()
    assert record.line_number == stored_line
    assert record.curated_fields == []
    assert record.conflicts == {}


def test_an_import_records_a_conflict_and_taking_its_value_hands_the_field_back(
    curator: User,
) -> None:
    record, line = _curated_conflict(curator)
    assert record.conflicts["solutions"]["incoming"] == ["Theirs"]
    assert record.solutions == ["Mine"]

    _edit(record, curator, [], take_incoming=["solutions"])

    record.refresh_from_db()
    assert record.solutions == ["Theirs"]
    assert record.conflicts == {}
    assert "solutions" not in record.curated_fields
    _reimport(line, solutions=["Newer"])
    assert ErrorRecord.objects.get(pk=record.pk).solutions == ["Newer"]


def test_taking_a_conflict_an_import_settled_meanwhile_keeps_the_curators_value(
    curator: User,
) -> None:
    """A form opened before an import cleared the conflict asks to take a value that is no
    longer offered: the save goes through and changes nothing it was not asked to."""
    record, _line = _curated_conflict(curator)
    ErrorRecord.objects.filter(pk=record.pk).update(conflicts={})
    _edit(record, curator, [], take_incoming=["solutions"])
    record.refresh_from_db()
    assert record.solutions == ["Mine"]
    assert record.curated_fields == ["solutions"]


def test_keeping_the_curators_value_dismisses_the_conflict_only(curator: User) -> None:
    record, _line = _curated_conflict(curator)
    _edit(record, curator, [], keep_mine=["solutions"])
    record.refresh_from_db()
    assert record.solutions == ["Mine"]
    assert record.conflicts == {}
    assert record.curated_fields == ["solutions"]


def test_taking_the_imports_tags_rebuilds_the_tag_index(curator: User) -> None:
    record, line = _seeded()
    add_tags([record], ["mine"], user=curator, reason="test")
    _reimport(line, tags=["theirs"])
    record = ErrorRecord.objects.get(pk=record.pk)
    _edit(record, curator, [], take_incoming=["tags"])
    names = RecordTag.objects.filter(record=record).values_list("tag__name", flat=True)
    assert list(names) == ["theirs"]


def test_a_revert_restores_curated_values_and_keeps_the_newest_provenance(
    curator: User,
) -> None:
    record, line = _seeded(solutions=["Original advice"])
    original = record.history.latest()
    record.solutions = ["Edited advice"]
    _edit(record, curator, ["solutions"])
    _reimport(line, lineNumber=99, solutions=["Upstream"])
    old = original.instance  # what simple_history's revert form edits

    edit = _edit(old, curator, [], is_revert=True)

    assert edit.changed == ["solutions"]
    record.refresh_from_db()
    assert record.solutions == ["Original advice"]
    assert record.line_number == 99
    assert record.curated_fields == ["solutions"]  # the old version had none
    assert record.conflicts == {}  # the revert settles the conflict it resolves
    latest = record.history.latest()
    assert (latest.history_user, latest.history_change_reason) == (curator, "admin: revert")


def test_a_revert_keeps_the_verdict_on_an_unchanged_pattern(curator: User) -> None:
    record, _line = _seeded()
    original = record.history.latest()
    ErrorRecord.objects.filter(pk=record.pk).update(pattern_engine="re2")
    _edit(original.instance, curator, [], is_revert=True)
    assert ErrorRecord.objects.get(pk=record.pk).pattern_engine == "re2"


def test_accepted_collisions_are_warned_about(curator: User) -> None:
    record, _line = _seeded()
    record.accept_collisions = True
    record.collisions = ()
    assert not any("collisions" in w for w in _edit(record, curator, []).warnings)
    other, _other_line = _seeded(
        errorMessage="Backfill progress for vnode {} lost",
        messagePattern="Backfill progress for vnode (.+?) lost",
    )
    record.message_pattern = "Backfill progress for vnode (.+?) (.+?)"
    record.full_clean()
    assert [c.id for c in record.collisions] == [other.pk]
    assert any(other.pk in w for w in _edit(record, curator, []).warnings)


def test_bulk_writes_name_the_curator_outside_a_request(curator: User) -> None:
    a, b = _seeded()[0], _seeded()[0]
    assert set_status([a], Status.RETIRED, reason="admin: retire", user=curator) == 1
    assert add_tags([b], ["triaged"], user=curator, reason="admin: add tag triaged") == 1
    for record in (a, b):
        assert record.history.latest().history_user == curator
    assert ErrorRecord.objects.get(pk=b.pk).curated_fields == ["tags"]


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


def test_a_revert_form_does_not_offer_settling_the_old_versions_conflicts(
    curator_client: Client,
) -> None:
    record, line = _seeded()
    curator_client.post(change_url(record), form_data(record, solutions="Mine"))
    _reimport(line, solutions=["Theirs"])
    with_conflict = record.history.latest()
    assert with_conflict.conflicts
    record.refresh_from_db()
    assert "Take the import" in curator_client.get(change_url(record)).content.decode()
    curator_client.post(change_url(record), form_data(record, keep_curated=["solutions"]))

    revert_url = reverse(
        "admin:kb_errorrecord_simple_history", args=[record.pk, with_conflict.history_id]
    )
    assert "Take the import" not in curator_client.get(revert_url).content.decode()


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
    # History rows do not copy the snippet (kb.records.models: ``ErrorRecord.history``).
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
