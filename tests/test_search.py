"""Full-text search: substring semantics, ranking, fallbacks, and the index staying in step.

Runs unchanged on SQLite (FTS5 trigram + triggers) and PostgreSQL (pg_trgm): the same
queries must find the same records on both (``docs/reliability.md#r17-backend-parity``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from kb.browse.search import fts5_expression, search_records, split_terms
from kb.records.models import ErrorRecord
from kb.records.search_index import ensure_search_index, search_index_missing
from kb.records.services import delete_records, save_curated
from tests.factories import import_lines, make_line
from tests.source_imports import imports

# --- the query parser (pure) -----------------------------------------------------------------


def test_terms_are_split_on_whitespace_deduplicated_and_capped() -> None:
    assert split_terms("  not   found  NOT ") == ["not", "found"]
    assert len(split_terms(" ".join(f"t{i}x" for i in range(50)))) == 12


def test_fts5_expression_quotes_every_term_so_operators_are_literal() -> None:
    expr = fts5_expression(['say"hi', "NEAR(a", "{message}:", "x*", "-y", "AND"])
    assert '"say""hi"' in expr
    assert '"NEAR(a"' in expr
    assert '"{message}:"' in expr
    assert '"AND"' in expr
    assert expr.startswith("{message class code slug documentation}: (")


# --- searching -------------------------------------------------------------------------------


def add(**overrides: Any) -> str:
    """A record whose searchable text is only what the test gives (the seed's is cleared)."""
    message = overrides.pop("errorMessage", "Plain failure")
    line = make_line(errorMessage=message, messagePattern=overrides.pop("pattern", message))
    line["record"].update(errorClass=None, errorCode=None, documentation=None)
    line["record"].update(overrides)
    report = import_lines(line)
    assert report.rejected == 0, report.errors
    return line["record"]["id"]


def found(query: str) -> list[str]:
    return list(search_records(ErrorRecord.objects.published(), query).values_list("pk", flat=True))


@pytest.mark.django_db
def test_search_finds_substrings_inside_identifiers() -> None:
    stream = add(errorMessage="Stream stopped", errorClass="StreamExecutorError")
    add(errorMessage="Unrelated thing", errorClass="ValueError")
    assert found("Executor") == [stream]
    assert found("executorerror") == [stream]  # case-insensitive


@pytest.mark.django_db
def test_search_covers_message_class_code_slug_and_documentation() -> None:
    by_message = add(errorMessage="Backfill progress missing for vnode")
    by_code = add(errorMessage="Other one", errorCode="ERR_QUOTA_EXCEEDED")
    by_doc = add(errorMessage="Third one", documentation="Raised when the zanzibar check fails")
    assert found("progress missing") == [by_message]
    assert found("QUOTA_EXC") == [by_code]
    assert found("zanzibar") == [by_doc]


@pytest.mark.django_db
def test_every_term_must_match_somewhere() -> None:
    both = add(errorMessage="Connection refused by upstream", errorClass="NetError")
    add(errorMessage="Connection reset by peer")
    assert found("connection NetError") == [both]
    assert found("connection refused") == [both]
    assert set(found("connection")) >= {both}


@pytest.mark.django_db
def test_a_hit_in_the_message_ranks_above_one_in_the_documentation() -> None:
    in_doc = add(errorMessage="Something else", documentation="mentions the flux capacitor")
    in_message = add(errorMessage="Flux capacitor overloaded")
    assert found("flux capacitor") == [in_message, in_doc]


@pytest.mark.django_db
def test_at_most_bounds_a_broad_search_to_matching_records_ranked_or_in_list_order() -> None:
    """``at_most``: at most that many records, every one a match, best first (or in the
    list's own order when unranked); a search under the bound is not affected."""
    in_message = [add(errorMessage=f"Quorum lost on node {n}", slug=f"b-{n}") for n in range(4)]
    in_docs = add(errorMessage="Cluster degraded", documentation="After quorum lost", slug="a-0")
    add(errorMessage="Unrelated failure", slug="c-0")
    published = ErrorRecord.objects.published()
    bounded = list(search_records(published, "quorum lost", at_most=3).values_list("pk", flat=True))
    assert len(bounded) == 3
    assert set(bounded) <= {*in_message, in_docs}
    everything = found("quorum lost")
    assert everything[-1] == in_docs  # a documentation hit ranks last ...
    within = list(search_records(published, "quorum lost", at_most=10).values_list("pk", flat=True))
    assert within == everything  # ... and a bound above the matches changes nothing
    in_order = search_records(published.order_by("slug"), "quorum lost", ranked=False, at_most=10)
    assert list(in_order.values_list("pk", flat=True)) == [in_docs, *in_message]


@pytest.mark.django_db
def test_short_queries_fall_back_to_substring_search() -> None:
    hit = add(errorMessage="IO at xz failed")
    add(errorMessage="Nothing here")
    assert found("xz") == [hit]
    # a short term inside a longer query is applied as a substring filter
    assert found("xz failed") == [hit]
    assert found("qq failed") == []


@pytest.mark.django_db
def test_exact_record_id_finds_that_record() -> None:
    record_id = add(errorMessage="Findable by id")
    add(errorMessage="Another")
    assert found(record_id) == [record_id]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    ['"', '""', "'", "*", "NEAR(", "a:b", "{message}: x", "-abc", "AND OR NOT", "^abc", "%_\\"],
)
def test_queries_with_syntax_characters_never_fail(query: str) -> None:
    add(errorMessage="Plain failure")
    assert isinstance(found(query), list)


@pytest.mark.django_db
def test_drafts_are_not_found_through_the_published_list() -> None:
    record_id = add(errorMessage="Quasar meltdown")
    record = ErrorRecord.objects.get(pk=record_id)
    record.status = "draft"
    save_curated(record, changed_attrs=["status"])
    assert found("Quasar") == []


@pytest.mark.django_db
def test_index_follows_curator_edits_reimports_and_deletes() -> None:
    record_id = add(errorMessage="Original wording here")
    record = ErrorRecord.objects.get(pk=record_id)
    record.error_message = "Reworded message text"
    save_curated(record, changed_attrs=["error_message"])
    assert found("Reworded") == [record_id]
    assert found("Original wording") == []

    # an import with new content (later contentChangedAt) updates the index too
    line = make_line(errorMessage="Imported first", messagePattern="Imported first")
    line["record"]["contentChangedAt"] = "2026-01-01T00:00:00.000Z"
    assert import_lines(line).rejected == 0
    newer = {**line, "record": {**line["record"], "errorMessage": "Imported second"}}
    newer["record"]["messagePattern"] = "Imported second"
    newer["record"]["contentChangedAt"] = "2026-02-01T00:00:00.000Z"
    assert import_lines(newer).updated == 1
    assert found("Imported second") == [line["record"]["id"]]
    assert found("Imported first") == []

    delete_records(ErrorRecord.objects.filter(pk=record_id))
    assert found("Reworded") == []


@pytest.mark.django_db
def test_search_structures_exist_after_migrations() -> None:
    """With no hook after ``migrate``, this fails for a migration that rebuilds the records
    table on SQLite without reinstalling the triggers (see ``kb.records.search_index``)."""
    assert search_index_missing() == []


def _migrate(*args: str) -> None:
    call_command("migrate", *args, verbosity=0, interactive=False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("target", ["0012_severity_unindexed", "zero"])
def test_migrating_back_and_forth_keeps_search_and_indexes_whole(target: str) -> None:
    """``migrate`` alone gives a working search, from an empty database or from 0012."""
    try:
        _migrate("kb", target)
        _migrate()
        assert search_index_missing() == []
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, "kb_errorrecord")
        indexes = {name for name, info in constraints.items() if info["index"]}
        assert {"kb_record_listing", "kb_record_browse"} <= indexes
        record_id = add(errorMessage="Migrated there and back")
        assert found("there and back") == [record_id]
    finally:
        _migrate()


MIGRATIONS = sorted((Path(__file__).resolve().parents[1] / "kb").glob("*/migrations/*.py"))
_A_MIGRATION = re.compile(r"kb\.\w+\.migrations(\.|$)")
# The one allowed: ``ImportJob.file`` names its storage callable, which Django compares by
# identity, so a copy in the migration would have makemigrations alter the field back to it.
_ALLOWED = {("kb/records/migrations/0003_import_job.py", "kb.records.models")}


def test_migrations_import_nothing_from_kb_but_other_migrations() -> None:
    """A migration holds the SQL and logic it ran: importing live code (``search_index``)
    would let a later edit change what an old migration does."""
    root = Path(__file__).resolve().parents[1]
    assert MIGRATIONS, "no migration found"
    offending = []
    for path in MIGRATIONS:
        where = path.relative_to(root).as_posix()
        package = ".".join(path.relative_to(root).parent.parts)
        for _line, name in imports(path.read_text(), package):
            from_kb = name == "kb" or name.startswith("kb.")
            allowed = _A_MIGRATION.match(name) or any(
                where == file and (name == module or name.startswith(f"{module}."))
                for file, module in _ALLOWED
            )
            if from_kb and not allowed:
                offending.append(f"{where}: {name}")
    assert offending == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite triggers")
def test_lost_triggers_are_recreated_and_the_index_refilled() -> None:
    record_id = add(errorMessage="Survives a table rebuild")
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER kb_record_fts_ai")
        cursor.execute("DELETE FROM kb_record_fts")
    assert "kb_record_fts_ai" in search_index_missing()
    assert ensure_search_index() is True  # the repair migration 0013 runs
    assert search_index_missing() == []
    assert found("table rebuild") == [record_id]
    assert ensure_search_index() is False  # idempotent


@pytest.mark.django_db
def test_search_through_the_page_and_the_api_agree(client: Any) -> None:
    ids = [add(errorMessage=f"Turbine {i} stalled") for i in range(3)]
    add(errorMessage="Nothing to see")
    html = client.get("/records/", {"q": "turbine stalled"}).content.decode()
    assert "3 records matching" in html
    data = client.get("/api/records", {"q": "turbine stalled"}).json()
    assert sorted(item["id"] for item in data["items"]) == sorted(ids)


@pytest.mark.django_db
def test_a_broad_search_lists_ranks_and_counts_facets_over_the_first_records_found(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``SEARCH_RANKED`` matches the page and the API list that many, every one a
    match, best first, count the facets over them, and say that more were found; under
    the bound nothing changes."""
    import kb.browse.filters
    import kb.browse.selectors

    for module in (kb.browse.selectors, kb.browse.filters):
        monkeypatch.setattr(module, "SEARCH_RANKED", 3)
    in_message = [add(errorMessage=f"Piston {n} seized", repo="acme/engine") for n in range(4)]
    in_docs = add(errorMessage="Engine stopped", documentation="a piston seized", repo="acme/x")
    # first: the facets of a search are cached by its words, whatever else was asked
    unread = client.get("/api/records", {"q": "piston seized", "release": "1.4"}).json()
    assert unread["release_error"]  # no repository chosen: nothing listed, and why ...
    assert unread["count"] == 0
    counted = [v["count"] for f in unread["facets"] if f["param"] == "repo" for v in f["values"]]
    assert sum(counted) == 3  # ... while the facets still count what the search finds
    data = client.get("/api/records", {"q": "piston seized"}).json()
    listed = [item["id"] for item in data["items"]]
    assert data["more_found"] is True
    assert data["count"] == len(listed) == 3
    assert set(listed) <= {*in_message, in_docs}
    if in_docs in listed:
        assert listed[-1] == in_docs  # ranked: a documentation hit after the message hits
    repos = {
        v["value"]: v["count"] for f in data["facets"] if f["param"] == "repo" for v in f["values"]
    }
    assert sum(repos.values()) == 3  # the facets count the records listed
    html = client.get("/records/", {"q": "piston seized"}).content.decode()
    assert "More than 3 records matching" in html
    assert "Add a word or choose a filter to narrow it." in html
    narrowed = client.get("/api/records", {"q": "piston seized", "repo": "acme/x"}).json()
    assert [item["id"] for item in narrowed["items"]] == [in_docs]  # filtered before the bound
    assert narrowed["more_found"] is False
    few = client.get("/api/records", {"q": "engine stopped"}).json()
    assert few["more_found"] is False
    assert few["count"] == 1
    assert "More than" not in client.get("/records/", {"q": "engine stopped"}).content.decode()


@pytest.mark.django_db
def test_a_message_holding_every_word_ranks_above_documentation_holding_the_phrase(
    client: Any,
) -> None:
    """Both backends rank by the fields the words are in (the message weighs most): the
    documentation's exact phrase does not lift its record above messages that hold every
    word of the query apart."""
    in_message = [add(errorMessage=f"Piston {n} seized", repo="acme/engine") for n in range(3)]
    in_docs = add(errorMessage="Engine stopped", documentation="a piston seized", repo="acme/x")
    data = client.get("/api/records", {"q": "piston seized"}).json()
    listed = [item["id"] for item in data["items"]]
    assert sorted(listed[:3]) == sorted(in_message)
    assert listed[3:] == [in_docs]


def _index_rows() -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.record_id, f.message, f.class, f.code, f.slug, f.documentation "
            "FROM kb_record_fts f JOIN kb_record_search_map m ON m.fts_rowid = f.rowid "
            "AND m.record_id = f.record_id ORDER BY f.record_id"
        )
        return cursor.fetchall()


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite FTS5 index")
def test_batch_indexed_imports_leave_the_index_equal_to_a_full_rebuild() -> None:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    lines = [make_line(errorMessage=f"Batch indexed {word}") for word in words]
    import_lines(*lines, batch_size=3)
    changed = {**lines[2], "record": {**lines[2]["record"], "errorMessage": "Rewritten text"}}
    changed["record"]["contentChangedAt"] = "2099-01-01T00:00:00Z"
    import_lines(changed, lines[3], make_line(errorMessage="One more"), batch_size=2)
    edited = ErrorRecord.objects.get(pk=lines[4]["record"]["id"])
    edited.error_message = "Curator wording"
    save_curated(edited, changed_attrs=["error_message"])
    delete_records(ErrorRecord.objects.filter(pk=lines[5]["record"]["id"]))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kb_record_fts_defer")
        assert cursor.fetchone() == (0,)  # the triggers are live again
    incremental = _index_rows()
    assert len(incremental) == ErrorRecord.objects.count()
    assert found("Rewritten text") == [lines[2]["record"]["id"]]
    assert found("Curator wording") == [lines[4]["record"]["id"]]
    assert found("indexed foxtrot") == []
    assert found("indexed golf") == [lines[6]["record"]["id"]]
    ensure_search_index(rebuild=True)
    assert _index_rows() == incremental
