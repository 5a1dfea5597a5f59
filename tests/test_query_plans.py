"""Query plans that keep pages fast at 10^5-10^6 records, checked on SQLite's planner (it
keeps no statistics, so its plan does not depend on the rows in the test database): no
query here sorts or scans the whole records table. Times are in ``bench_pages.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kb.browse import selectors
from kb.browse.filters import RecordFilter
from kb.browse.releases import ReleaseScope, in_release
from kb.records.models import ErrorRecord, Status

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner"),
]


def plan(sql: str, params: Any = ()) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return [row[-1] for row in cursor.fetchall()]


def test_the_default_order_is_read_off_its_index() -> None:
    """The admin's record list (every status, model order) reads its first page off
    ``kb_record_order`` instead of sorting a whole repository's rows."""
    sql, params = ErrorRecord.objects.order_by("repo", "slug", "id")[:50].query.sql_with_params()
    steps = plan(sql, params)
    assert any("kb_record_order" in step for step in steps), steps
    assert not any("TEMP B-TREE" in step for step in steps), steps


def test_tag_counts_never_scan_the_records_table() -> None:
    hidden = selectors._hidden_statuses()
    steps = plan(selectors.count_tags_sql(hidden), hidden)
    record_steps = [step for step in steps if re.search(r"\b(r|kb_errorrecord)\b", step)]
    assert record_steps, steps
    assert all("COVERING INDEX" in step and "status=?" in step for step in record_steps), steps
    assert not any(step.startswith("SCAN r") or "SCAN kb_errorrecord" in step for step in steps)


def test_a_common_tags_first_page_walks_the_list_index() -> None:
    """Along the list order: ``kb_record_listing`` in order, a probe of the tag's index per
    record, no sort; from the tag: the tag's rows first, then one lookup per row."""
    along = plan(
        f"SELECT r.id {selectors._TagRecordIds._ALONG_LIST} ORDER BY r.repo, r.slug, r.id LIMIT 25",
        {"tag": 1, "status": Status.PUBLISHED},
    )
    assert "kb_record_listing" in along[0], along
    assert not any("TEMP B-TREE" in step for step in along), along
    by_tag = plan(
        f"SELECT r.id {selectors._TagRecordIds._BY_TAG} ORDER BY r.repo, r.slug, r.id LIMIT 25",
        {"tag": 1, "status": Status.PUBLISHED},
    )
    assert by_tag[0].startswith("SEARCH rt"), by_tag


def _captured_plan(run: Any) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        run()
    return plan(queries.captured_queries[-1]["sql"])


def test_a_tag_and_a_severity_are_counted_from_covering_indexes() -> None:
    """The list filtered by a tag and a severity is counted from covering indexes, not
    through a severity index and a lookup of each record."""
    filtered = RecordFilter(
        {"tag": "log", "severity": "error"}, queryset=ErrorRecord.objects.published()
    )
    steps = _captured_plan(filtered.qs.count)
    record_steps = [step for step in steps if "kb_errorrecord" in step]
    assert record_steps, steps
    assert all("COVERING INDEX" in step for step in record_steps), steps


def test_the_admin_list_by_severity_walks_the_order_index() -> None:
    steps = plan(
        *ErrorRecord.objects.filter(severity="error")
        .order_by("repo", "slug", "id")[:50]
        .query.sql_with_params()
    )
    assert any("kb_record_order" in step for step in steps), steps
    assert not any("TEMP B-TREE" in step for step in steps), steps


def test_a_release_filter_reads_the_release_index() -> None:
    """The records of one repository's release: their ids from ``kb_record_release`` (a
    seek per first-release name, the last release tested in the index), the rest read
    from covering indexes, no scan, no sort; the repository's release names read off the
    release index alone."""
    scope = ReleaseScope(
        repo="r/r",
        asked="1.4",
        label="1.4.x",
        releases=("1.4.0", "1.4.1"),
        starts=("1.3.0", "1.4.0", "1.4.1"),
        ended=("1.3.0",),
    )
    listed = in_release(ErrorRecord.objects.published(), scope)
    for query in (listed.values_list("pk", flat=True), listed.values("pk").order_by()):
        steps = plan(*query.query.sql_with_params())
        # the list in order along its index, or the count from the ids in the release
        assert "COVERING INDEX" in steps[0], steps
        assert any(
            "INDEX kb_record_release (repo=? AND first_release=?)" in step for step in steps
        ), steps
        assert not any(step.startswith("SCAN") or "TEMP B-TREE" in step for step in steps)
    names = (
        ErrorRecord.objects.filter(repo="r/r", first_release__isnull=False)
        .order_by()
        .values_list("first_release", "last_release")
        .distinct()
    )
    steps = plan(*names.query.sql_with_params())
    assert any("COVERING INDEX kb_record_release (repo=?" in step for step in steps), steps
