"""Ranked full-text search over records, on SQLite (FTS5 trigram) and PostgreSQL (pg_trgm).

People search the knowledge base with fragments they copied from a log or a stack trace:
half a message, a class name (``StreamExecutorError``), a code (``ERR_TIMEOUT``), a slug.
Word tokenizers miss most of these (``Executor`` inside a CamelCase name), so both backends
search *substrings* through trigram indexes, and both mean the same thing by a query: every
whitespace-separated term must occur, case-insensitively, in one of the searched fields
(message, class, code, slug, documentation); results are ranked, best first.

- SQLite: an FTS5 table with the ``trigram`` tokenizer (``kb_record_fts``) holds a copy of
  the searched fields and is kept in step with ``kb_errorrecord`` by triggers, so every
  write path (importer ``bulk_create``/``bulk_update``, admin, services) updates it without
  Python code. Its rowids live in a small map table with an ``INTEGER PRIMARY KEY``
  (``kb_record_search_map``): the record table's own rowid is not stable across ``VACUUM``.
  Ranking is FTS5's bm25 with per-column weights (a hit in the message counts most).
- PostgreSQL: one GIN ``gin_trgm_ops`` index over the searched fields joined into one
  upper-cased document (``PG_DOCUMENT``), each term one ``LIKE`` on it; ranking uses the
  same column weights (the whole query found in a field), then shorter messages first.

The record list ranks at most ``SEARCH_RANKED`` records, the first the index finds
(``first_found``), and says when a search found more: a common word would otherwise be
ranked (and its facets counted) over most of the table.

Queries shorter than 3 characters cannot use trigrams: they fall back to the portable
``ErrorRecord.objects.search`` (substring scan). Terms of 1-2 characters inside a longer
query are applied as substring filters beside the index.

Bulk writers (the importer) switch the triggers off for their own transaction and index
the batch with four set-based statements instead (``search_index_deferred``): a row in
``kb_record_fts_defer`` is the switch the triggers' ``WHEN`` clauses test. It is written and
removed inside the writer's transaction, so no other connection ever sees it (SQLite has
one writer at a time; readers see committed state only), and a rollback removes it too.

Keeping the index (creating it in the migrations, repairing it, batch indexing) is
``kb.records.search_index``'s job; its docstring says what a migration that rebuilds the records
table on SQLite must do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.db import connections
from django.db.models import Case, FloatField, Q, QuerySet, Value, When
from django.db.models.functions import Length

from kb.records.search_index import FTS_COLUMNS, FTS_TABLE, PG_DOCUMENT, RECORD_TABLE, SEARCH_FIELDS

if TYPE_CHECKING:
    from kb.records.models import ErrorRecordQuerySet

MIN_TRIGRAM = 3
# A search lists, ranks and counts facets over the first this many records it finds, and
# says when there are more. Ranking every match of a common word reads a large share of a
# large table on every new query; past a few hundred records a reader narrows the search
# rather than pages through it, and the page tells them to.
SEARCH_RANKED = 500
MAX_TERMS = 12
MAX_QUERY_CHARS = 500


# --- query parsing (pure) -------------------------------------------------------------------


def split_terms(query: str) -> list[str]:
    """The query's terms: whitespace-separated, de-duplicated (case-insensitively), capped."""
    seen: set[str] = set()
    terms: list[str] = []
    for raw in query[:MAX_QUERY_CHARS].split():
        key = raw.casefold()
        if key not in seen:
            seen.add(key)
            terms.append(raw)
        if len(terms) >= MAX_TERMS:
            break
    return terms


def fts5_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression: every term as a quoted string (a substring for trigram).

    Quoting makes every character literal (FTS5 operators, column filters, ``*``, ``^``
    lose their meaning), so user input cannot change the query's structure.
    """
    columns = " ".join(fts for fts, _col, _w in FTS_COLUMNS)
    quoted = " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return "{" + columns + "}: (" + quoted + ")"


def _substring_q(term: str) -> Q:
    cond = Q()
    for field in SEARCH_FIELDS:
        cond |= Q(**{f"{field}__icontains": term})
    return cond


# --- the search ----------------------------------------------------------------------------


def search_records(
    queryset: ErrorRecordQuerySet, query: str, *, ranked: bool = True, at_most: int | None = None
) -> QuerySet[Any]:
    """``queryset`` narrowed to records matching ``query``, best first.

    Rows carry ``search_rank`` (lower is better on SQLite, bm25; on PostgreSQL the order is
    applied by the queryset). An exact record id returns just that record.
    ``ranked=False``: the matches in ``queryset``'s own order, unranked.

    ``at_most``: only the first ``at_most`` records the index finds are ranked (or, with
    ``ranked=False``, kept in ``queryset``'s own order), so the work is bounded however
    common the words are: ranking every match of a common word reads most of the table,
    and walking the list's order until a page is full reads most of it too when the
    matches sit at its end (one repository's class name). For lists where that bound
    matters more than finding the very best of a broad search (the admin's).
    """
    query = (query or "").strip()[:MAX_QUERY_CHARS]
    if not query:
        return queryset
    terms = split_terms(query)
    long_terms = [t for t in terms if len(t) >= MIN_TRIGRAM]
    if not long_terms:
        return queryset.search(query)
    if " " not in query and queryset.model.objects.filter(pk=query).exists():
        return queryset.filter(pk=query)
    short = Q()
    for term in terms:
        if len(term) < MIN_TRIGRAM:
            short &= _substring_q(term)
    vendor = connections[queryset.db].vendor
    if at_most is not None:
        # Its own statement, not a subquery: the index's conditions name the records table,
        # which inside a subquery would be the outer query's (a scan testing every row).
        found = _matching(queryset.order_by(), vendor, long_terms).filter(short)
        queryset = queryset.filter(pk__in=list(found.values_list("pk", flat=True)[:at_most]))
        # Every candidate matches: no second test, except SQLite's bm25, which needs the join.
        if not ranked:
            return queryset
        if vendor == "postgresql":
            return _postgres_rank(queryset, query)
    if not ranked:
        return _matching(queryset, vendor, long_terms).filter(short)
    if vendor == "sqlite":
        return _sqlite_search(queryset, long_terms).filter(short)
    if vendor == "postgresql":
        return _postgres_rank(_matching(queryset, vendor, long_terms), query).filter(short)
    # Any other backend: the portable substring search, unranked.
    return queryset.filter(short, *[_substring_q(t) for t in long_terms])


def first_found(queryset: QuerySet[Any], query: str, limit: int) -> tuple[list[str], bool]:
    """The ids of the first ``limit`` records of ``queryset`` matching ``query``, in the
    order the index finds them (not ranked), and whether there are more. Bounded however
    common the query's words are: the scan stops at ``limit + 1``."""
    found = search_records(cast("ErrorRecordQuerySet", queryset), query, ranked=False)
    ids = list(found.order_by().values_list("pk", flat=True)[: limit + 1])  # the index's order
    return ids[:limit], len(ids) > limit


def rank_found(queryset: QuerySet[Any], query: str) -> QuerySet[Any]:
    """``queryset``, the records `first_found` found for ``query``, best first: ranked
    without testing the match again (on PostgreSQL the test would take the trigram index
    and read every match of a common word, which ``first_found`` stopped short of)."""
    terms = [t for t in split_terms(query) if len(t) >= MIN_TRIGRAM]
    if terms and connections[queryset.db].vendor == "postgresql":
        return _postgres_rank(queryset, query.strip()[:MAX_QUERY_CHARS])
    return search_records(cast("ErrorRecordQuerySet", queryset), query)


def _matching(queryset: QuerySet[Any], vendor: str, terms: list[str]) -> QuerySet[Any]:
    """``queryset`` narrowed to the records holding every term, through the index, unranked."""
    if vendor == "sqlite":
        return queryset.extra(  # noqa: S610 (constant SQL; the user query is a bound parameter)
            tables=[FTS_TABLE],
            where=[f"{FTS_TABLE}.record_id = {RECORD_TABLE}.id", f"{FTS_TABLE} MATCH %s"],
            params=[fts5_expression(terms)],
        )
    if vendor == "postgresql":
        # Every term a substring of the indexed document (``PG_DOCUMENT``); ``upper(%s)`` of
        # a constant folds at planning time, so the GIN index applies.
        return queryset.extra(  # noqa: S610 (constant SQL, bound terms)
            where=[f"{PG_DOCUMENT} LIKE upper(%s)"] * len(terms),
            params=[f"%{_like_escape(t)}%" for t in terms],
        )
    return queryset.filter(*[_substring_q(t) for t in terms])


def _sqlite_search(queryset: QuerySet[Any], terms: list[str]) -> QuerySet[Any]:
    # A join on the FTS table (FTS5 drives it: the MATCH constraint makes it the outer loop,
    # then one primary-key lookup per hit) with bm25 as the rank; ``extra`` is the one ORM
    # tool that joins an unmanaged virtual table without a model.
    weights = ", ".join(["0.0", *(str(w) for _f, _c, w in FTS_COLUMNS)])
    return queryset.extra(  # noqa: S610 (constant SQL; the user query is a bound parameter)
        tables=[FTS_TABLE],
        where=[f"{FTS_TABLE}.record_id = {RECORD_TABLE}.id", f"{FTS_TABLE} MATCH %s"],
        params=[fts5_expression(terms)],
        select={"search_rank": f"bm25({FTS_TABLE}, {weights})"},
        order_by=["search_rank", f"{RECORD_TABLE}.id"],
    )


def _like_escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _postgres_rank(queryset: QuerySet[Any], query: str) -> QuerySet[Any]:
    # Rank like the SQLite side's column weights: each word of the query found in a field
    # scores that field's weight, and the whole query found there scores it once more; among
    # equals, the shorter message (the query is more of it) first. By the words, not only
    # the phrase: a message holding every word outranks documentation that holds the
    # phrase, as bm25's weights have it. (``word_similarity`` per hit was tried: it computes
    # a similarity for every row a broad word finds, which is most of the table.)
    words = list(dict.fromkeys(t for t in split_terms(query) if t != query))
    rank: Any = Value(0.0)
    for _fts, col, weight in FTS_COLUMNS:
        for text in (*words, query):
            rank = rank + Case(
                When(**{f"{col}__icontains": text}, then=Value(weight)),
                default=Value(0.0),
                output_field=FloatField(),
            )
    return queryset.annotate(search_rank=-rank).order_by(
        "search_rank", Length("error_message"), "pk"
    )
