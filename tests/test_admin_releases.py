"""The record admin and a record's releases: shown read only, and an older wording that
misleads retired (and brought back) by a curator, kept by re-imports."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from kb.records.models import ErrorRecord, current_revision
from kb.records.signals import published
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.curation_support import change_url, form_data
from tests.factories import encode, import_lines, make_record
from tests.test_admin_import import upload
from tests.test_pages_releases import NEW, OLD, history_line

pytestmark = pytest.mark.django_db


@pytest.fixture
def record() -> ErrorRecord:
    return make_record(**history_line()["record"])


def test_the_change_page_shows_the_releases_read_only(
    curator_client: Client, record: ErrorRecord
) -> None:
    html = curator_client.get(change_url(record)).content.decode()
    assert 'class="fieldset-heading">Releases</h2>' in html
    wordings = re.search(r'<table class="kb-wordings">.*?</table>', html, re.S)
    assert wordings is not None
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td>", wordings.group(0))
    assert rows == [("1.3.0\u20131.3.24", "alias (matched)"), ("1.4.0\u20132.0.1", "current")]
    assert "Add one() &lt;raises&gt;" in html  # the commit subject, escaped
    assert 'href="https://github.com/sqlalchemy/sqlalchemy/commit/' + "a" * 40 + '"' in html
    # the release columns are displayed, not form fields
    for name in ("first_release", "last_release", "removed_in", "release_history"):
        assert f'name="{name}"' not in html
    # the one thing a curator may change: which older wording is retired
    boxes = re.findall(r'<input type="checkbox" name="retired_wordings" value="([^"]*)"', html)
    assert boxes == [OLD["pattern"]]


def test_a_record_without_history_has_no_releases_on_its_change_page(
    curator_client: Client,
) -> None:
    plain = make_record()
    html = curator_client.get(change_url(plain)).content.decode()
    assert 'class="fieldset-heading">Releases</h2>' not in html
    assert 'name="retired_wordings"' not in html
    response = curator_client.post(change_url(plain), form_data(plain))
    assert response.status_code == 302
    plain.refresh_from_db()
    assert (plain.retired_wordings, plain.curated_fields) == ([], [])


def test_a_curator_retires_an_alias_and_brings_it_back(
    curator_client: Client, record: ErrorRecord
) -> None:
    sent: list[Any] = []

    def receiver(**kwargs: Any) -> None:
        sent.append(kwargs)

    published.connect(receiver)
    try:
        before = current_revision()
        response = curator_client.post(
            change_url(record),
            form_data(record, retired_wordings=[OLD["pattern"]], change_reason="misleads"),
        )
        assert response.status_code == 302
        record.refresh_from_db()
        assert record.retired_wordings == [OLD["pattern"]]
        assert record.curated_fields == ["retiredWordings"]
        assert record.revision > before
        assert record.history.latest().history_change_reason == "misleads"
        assert record.history.latest().retired_wordings == [OLD["pattern"]]
        assert len(sent) == 1  # the matcher is re-published with the alias left out

        page = curator_client.get(record.get_absolute_url()).content.decode()
        assert "retired by a curator" in page

        response = curator_client.post(change_url(record), form_data(record))
        assert response.status_code == 302
        record.refresh_from_db()
        assert record.retired_wordings == []
        assert len(sent) == 2
    finally:
        published.disconnect(receiver)


def test_only_the_records_own_older_wordings_can_be_retired(
    curator_client: Client, record: ErrorRecord
) -> None:
    for pattern in (NEW["pattern"], "something else entirely"):
        response = curator_client.post(
            change_url(record), form_data(record, retired_wordings=[pattern])
        )
        assert response.status_code == 200
        assert "Only the record&#x27;s own older wordings can be retired" in (
            response.content.decode()
        )
    record.refresh_from_db()
    assert record.retired_wordings == []


def test_a_retired_wording_survives_a_reimport_as_a_conflict(
    curator_client: Client, record: ErrorRecord
) -> None:
    curator_client.post(change_url(record), form_data(record, retired_wordings=[OLD["pattern"]]))
    line = history_line(id=record.pk, slug=record.slug, retiredWordings=[])
    report = import_lines(line)
    assert report.conflicts == 1
    record.refresh_from_db()
    assert record.retired_wordings == [OLD["pattern"]]
    assert "retiredWordings" in record.conflicts
    html = curator_client.get(change_url(record)).content.decode()
    assert re.search(r'value="retiredWordings"', html)  # settle it: take the import's or keep


def test_the_admins_upload_reads_the_release_keys_and_an_older_file_keeps_them(
    curator_client: Client,
) -> None:
    """The admin's upload (a task running the importer on the stored file) takes the same
    optional keys as ``import_records``: a file with them stores them, an older file
    without them leaves them, a curator's retired wording stays through both."""
    line = history_line()
    job = upload(curator_client, "releases.jsonl", b"".join(encode(line)))
    assert job.report["created"] == 1
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    assert (record.first_release, record.last_release) == ("1.3.0", "2.0.1")
    assert record.release_history["wordings"][0]["pattern"] == OLD["pattern"]
    curator_client.post(change_url(record), form_data(record, retired_wordings=[OLD["pattern"]]))

    learned = ("firstRelease", "lastRelease", "releaseHistory")
    older = {**line, "record": {k: v for k, v in line["record"].items() if k not in learned}}
    job = upload(curator_client, "older.jsonl", b"".join(encode(older)))
    assert (job.report["rejected"], job.report["conflicts"]) == (0, 0)
    record.refresh_from_db()
    assert record.first_release == "1.3.0"
    assert record.release_history["wordings"][1]["pattern"] == NEW["pattern"]
    assert record.retired_wordings == [OLD["pattern"]]


def test_the_bench_says_which_older_wording_a_sample_line_matches(
    curator_client: Client, record: ErrorRecord
) -> None:
    sample = "INFO ok\nsqlalchemy.orm.exc.NoResultFound: No row was found for one()\n"
    response = curator_client.post(
        reverse("admin:kb_errorrecord_bench", args=[record.pk]),
        {"message_pattern": record.message_pattern, "error_message": record.error_message,
         "bench_text": sample},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    html = response.content.decode()
    table = re.search(r'<table class="kb-wordings">.*?</table>', html, re.S)
    assert table is not None
    rows = re.findall(r"<tr><td>(.*?)</td>.*?<td>([^<]*)</td></tr>", table.group(0), re.S)
    assert rows == [("1.3.0\u20131.3.24", "2")]


def test_an_old_versions_revert_page_keeps_the_retired_choice_it_had(
    curator_client: Client, record: ErrorRecord
) -> None:
    """History rows keep ``retired_wordings`` (not ``release_history``): reverting to a
    version from before a retirement brings the wording back."""
    before = record.history.latest()
    curator_client.post(change_url(record), form_data(record, retired_wordings=[OLD["pattern"]]))
    url = reverse("admin:kb_errorrecord_simple_history", args=[record.pk, before.history_id])
    page = curator_client.get(url)
    assert page.status_code == 200
    record.refresh_from_db()
    response = curator_client.post(url, form_data(record, retired_wordings=[]))
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.retired_wordings == []
    assert record.release_history["wordings"][0]["pattern"] == OLD["pattern"]  # kept as stored


def test_the_bench_ranks_an_edit_with_the_records_older_wordings_still_matched(
    record: ErrorRecord,
) -> None:
    """Editing a learned record's pattern keeps its older wordings matched, as saving it
    would: a sample in an older wording still finds the edited record."""
    from kb.curation.tester import run_bench

    sample = "sqlalchemy.orm.exc.NoResultFound: No row was found for one()"
    result = run_bench(
        pattern=record.message_pattern + " now",
        message=record.error_message + " now",
        text=sample,
        record_id=record.pk,
    )
    assert result.edited_rank == 1
