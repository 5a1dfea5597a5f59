""" "No known error found" says what the knowledge base covers: the repositories its matched
records come from, with their counts (from the data, cached per revision), and offers the
report, on the paste page and in the text and Markdown formats."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb.browse.selectors import Coverage, covered_repositories
from kb.records.models import ErrorRecord
from tests.factories import make_record

pytestmark = pytest.mark.django_db

UNKNOWN = "panic: runtime error: index out of range [3] with length 3\ngoroutine 1 [running]:\n"


@pytest.fixture
def records() -> None:
    for n in range(3):
        make_record(repo="apache/kafka", errorMessage=f"Kafka widget {n} is broken beyond {{}}",
                    messagePattern=f"Kafka widget {n} is broken beyond (.+?)")  # fmt: skip
    make_record(repo="etcd-io/etcd")
    draft = make_record(repo="django/django")
    ErrorRecord.objects.filter(pk=draft.pk).update(status="draft")  # not matched: not covered


def test_covered_repositories_count_matched_records_most_first(records: None) -> None:
    assert covered_repositories() == [Coverage("apache/kafka", 3), Coverage("etcd-io/etcd", 1)]


def test_the_count_is_cached_per_revision(records: None) -> None:
    covered_repositories()
    with CaptureQueriesContext(connection) as queries:
        covered_repositories()
    assert not [q for q in queries if "GROUP BY" in q["sql"].upper()]  # served from the cache
    make_record(
        repo="etcd-io/etcd",
        errorMessage="Etcd quokka {} lost",
        messagePattern="Etcd quokka (.+?) lost",
    )
    assert Coverage("etcd-io/etcd", 2) in covered_repositories()  # a new revision counts again


def test_the_paste_page_says_what_is_covered_and_offers_the_report(
    records: None, client: Client
) -> None:
    html = client.post("/match/", {"text": UNKNOWN}, headers={"HX-Request": "true"}).content
    page = html.decode()
    assert "No known error in this text" in page
    assert "covers errors of 2 repositories" in page
    kafka = page.index("<code>apache/kafka</code>")
    assert kafka < page.index("<code>etcd-io/etcd</code>")  # most records first
    assert "3 records" in page
    assert "1 record<" in page
    assert "?repo=apache/kafka" in page  # each links to its records
    assert "django/django" not in page
    assert "Report this unknown error" in page


def test_text_and_markdown_say_what_is_covered_and_json_keeps_its_shape(
    records: None, tmp_path: Path
) -> None:
    log = tmp_path / "unknown.log"
    log.write_text(UNKNOWN)

    def run(fmt: str) -> str:
        out = io.StringIO()
        call_command(
            "match", str(log), "--format", fmt, "--base-url", "https://kb.test", stdout=out
        )
        return out.getvalue()

    text = run("text")
    assert text.startswith("No known error found.\n")
    assert "covers apache/kafka (3 records), etcd-io/etcd (1 record)." in text
    assert "Paste the error at https://kb.test/ and choose 'Report this unknown error'" in text
    markdown = run("markdown")
    assert "covers apache/kafka (3 records), etcd\\-io/etcd (1 record)." in markdown
    assert "[Report this unknown error](https://kb.test/)" in markdown
    shape = json.loads(run("json"))
    assert "coverage" not in shape
    assert "report_url" not in shape
