"""Gap fingerprints and folding: same error with other values -> one gap, others apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb.loop.text import gaps
from kb.loop.text.error_lines import ErrorLine, find_error_lines
from kb.loop.text.gaps import MAX_SAMPLES, VAR, GapIndex, headline, key_of, template_of
from kb.loop.text.redact import redact

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "gaps.json"

# Pairs of pasted lines of the same error with different values (from the public labelled
# pastes): each pair must give one template.
SAME_TEMPLATE = [
    (
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but"
        " settings are not configured.",
        "ImproperlyConfigured: Requested setting USE_I18N, but settings are not configured.",
    ),
    (
        "django.urls.exceptions.NoReverseMatch: Reverse for 'item-list' not found. 'item-list'"
        " is not a valid view function or pattern name.",
        "NoReverseMatch: Reverse for 'rmp' not found. 'rmp' is not a valid view function or"
        " pattern name.",
    ),
    (
        "apply entries took too long [104.2239ms for 1 entries]",
        "apply entries took too long [12.318867ms for 3 entries]",
    ),
    (
        "health check for peer 684f2e4032b4dcc2 could not connect: dial tcp <ip>:2380",
        "health check for peer 9b3523b532ddb797 could not connect: dial tcp <ip>:2379",
    ),
    (
        "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached, connection"
        " timed out, timeout 30.00 (Background on this error at: https://sqlalche.me/e/20/3o7r)",
        "QueuePool limit of size 1 overflow 0 reached, connection timed out, timeout 1.00",
    ),
    (
        "Parent instance <User at 0x7f0c42b64f50> is not bound to a Session; lazy load"
        " operation of attribute 'addresses' cannot proceed",
        "sqlalchemy.orm.exc.DetachedInstanceError: Parent instance <Novel at 0x7f496c947160> is"
        " not bound to a Session; lazy load operation of attribute 'urls' cannot proceed",
    ),
    (
        "Failed to connect to meta server 127.0.0.1:5690, trying again",
        "Failed to connect to meta server 10.0.3.4:5691, trying again",
    ),
    (
        "Job 7f3e2a9c-1b4d-4e8f-9a6c-1d2e3f4a5b6c failed for /home/<user>/data/in.csv",
        "Job 0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e failed for /home/<user>/other/x.csv",
    ),
]


@pytest.mark.parametrize(("a", "b"), SAME_TEMPLATE)
def test_same_error_other_values_same_template(a: str, b: str) -> None:
    assert key_of(template_of(a)) == key_of(template_of(b))
    assert VAR in template_of(a)


# Different records' messages. (Not here: two messages that share most of their words and
# differ only in the last clause, like SQLAlchemy's two "Could not determine join
# condition" errors; the similarity folds those, a known limit of the measured choice.)
DIFFERENT = [
    "Could not determine join condition between parent/child tables on relationship"
    " User.addresses - there are no foreign keys linking these tables.",
    "Instance '<User at 0x7f85ff85e850>' has been deleted, or its row is otherwise not present.",
    "No fixture named 'initial_products' found.",
    "Item has no field named 'colour'",
    "etcdserver: mvcc: database space exceeded",
    "sqlite3.OperationalError: database is locked",
    "Catalog error: table or source not found: pg_stat_user_tables",
]


def test_different_errors_fold_apart() -> None:
    index = GapIndex()
    ids = [index.add(template_of(line), line).id for line in DIFFERENT]
    assert len(set(ids)) == len(DIFFERENT)


def test_template_keeps_the_message_words() -> None:
    t = template_of(
        "sqlalchemy.exc.NoReferencedTableError: Foreign key associated with column"
        " 'orders.customer_id' could not find table 'customers'"
    )
    assert t == "Foreign key associated with column '<*>' could not find table '<*>'"
    # A short message keeps its class: "'<*>'" alone would fold every KeyError together.
    assert template_of("KeyError: 'Posts'") == "KeyError: '<*>'"
    # A quoted sentence is wording, not a value.
    assert "too short" in template_of("ValidationError: ['This password is too short. It must']")


def test_folding_counts_times_and_samples() -> None:
    index = GapIndex()
    line = "Failed to connect to meta server {}, trying again"
    for n in range(MAX_SAMPLES + 3):
        sample = line.format(f"10.0.0.{n}:5690")
        gap = index.add(template_of(sample), sample, seen_at=100.0 + n)
    assert len(index) == 1
    assert gap.count == MAX_SAMPLES + 3
    assert (gap.first_seen, gap.last_seen) == (100.0, 100.0 + MAX_SAMPLES + 2)
    assert len(gap.samples) == MAX_SAMPLES
    assert gap.samples[0].endswith("10.0.0.0:5690, trying again")  # how it started
    assert gap.samples[-1].endswith(f"10.0.0.{MAX_SAMPLES + 2}:5690, trying again")  # latest
    assert index.find(template_of(line.format("x"))) is gap


def test_an_unknown_error_report_end_to_end() -> None:
    """Two pastes of one error with a planted AWS key, DSN password and email each: one gap
    of count 2 whose samples hold none of them."""
    pastes = [
        "2026-01-02T03:04:05Z ERROR billing: sync failed for alice@example.com:"
        " key AKIAIOSFODNN7EXAMPLE rejected by postgres://app:S3cret1@db.acme-corp.com/x",
        "2026-01-03T03:04:05Z ERROR billing: sync failed for bob@corp.io:"
        " key AKIAI44QH8DHBEXAMPLE rejected by postgres://svc:Other2@10.1.2.3/y",
    ]
    index = GapIndex()
    for paste in pastes:
        head = headline(find_error_lines(paste))
        assert head is not None
        sample = redact(head.text).text
        gap = index.add(template_of(sample), sample)
    assert len(index) == 1
    assert gap.count == 2
    for secret in ("alice", "AKIAIOSFODNN7EXAMPLE", "S3cret1", "acme-corp", "bob@", "Other2"):
        assert all(secret not in s for s in gap.samples)
    assert "sync failed for <*>: key <*> rejected by" in gap.template


def test_headline_prefers_the_escaped_exception() -> None:
    lines = [
        ErrorLine("Error increasing counts", "log", "ERROR", 1),
        ErrorLine("KeyError: 'Posts'", "caused_by", None, 3, "KeyError"),
        ErrorLine("RuntimeError: first", "exception", None, 5, "RuntimeError"),
        ErrorLine("[SQL: SELECT 1]", "exception", None, 6),
        ErrorLine("RuntimeError: escaped", "exception", None, 9, "RuntimeError"),
    ]
    head = headline(lines)
    assert head is not None
    assert head.text == "RuntimeError: escaped"
    assert headline(lines[:2]) == lines[1]
    assert headline([]) is None


@pytest.mark.parametrize("method", gaps.METHODS)
def test_every_method_folds_identical_templates(method: str) -> None:
    index = GapIndex(method)
    a = index.add("connection to <*> refused after <*> retries", "s1")
    b = index.add("connection to <*> refused after <*> retries", "s2")
    c = index.add("table <*> does not exist in schema <*>", "s3")
    assert a is b
    assert c is not a


def test_drain_merges_differing_positions() -> None:
    index = GapIndex("drain", 0.5)
    index.add("lost connection to broker alpha now")
    gap = index.add("lost connection to broker beta now")
    assert gap.template == "lost connection to broker <*> now"


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown gap method"):
        GapIndex("magic")


def test_fuzzy_compares_a_bounded_number_of_gaps() -> None:
    index = GapIndex()
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for i in range(3000):
        index.load([gaps.Gap(0, f"shared words {words[i % 8]} {words[(i // 8) % 8]} item")])
    assert index.candidates("shared words alpha bravo item") <= 3 * 200


def test_the_code_uses_the_measured_choice() -> None:
    """The default method, scorer and threshold are those the benchmark chose."""
    chosen = json.loads(RESULTS.read_text(encoding="utf-8"))["chosen"]
    method, _, scorer = chosen["method"].partition(":")
    assert (method, scorer) == (gaps.DEFAULT_METHOD, gaps.DEFAULT_SCORER)
    assert chosen["threshold"] == gaps.DEFAULT_THRESHOLD


@given(st.text(max_size=300))
def test_prop_template_is_stable(line: str) -> None:
    t = template_of(line)
    assert len(t) <= gaps.MAX_TEMPLATE_CHARS
    assert template_of(t) == template_of(template_of(t))
