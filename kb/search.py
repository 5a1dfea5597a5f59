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

Queries shorter than 3 characters cannot use trigrams: they fall back to the portable
``ErrorRecord.objects.search`` (substring scan). Terms of 1-2 characters inside a longer
query are applied as substring filters beside the index.

Bulk writers (the importer) switch the triggers off for their own transaction and index
the batch with four set-based statements instead (``search_index_deferred``): a row in
``kb_record_fts_defer`` is the switch the triggers' ``WHEN`` clauses test. It is written and
removed inside the writer's transaction, so no other connection ever sees it (SQLite has
one writer at a time; readers see committed state only), and a rollback removes it too.

Django's SQLite schema editor rebuilds a table for some ``AlterField`` migrations, which
drops its triggers; ``ensure_search_index`` (idempotent, cheap) puts them back and refills
the index. Call it after migrations (``post_migrate``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError, connections
from django.db import connection as default_connection
from django.db.models import Case, FloatField, Q, QuerySet, Value, When
from django.db.models.functions import Length

MIN_TRIGRAM = 3
MAX_TERMS = 12
MAX_QUERY_CHARS = 500

FTS_TABLE = "kb_record_fts"
MAP_TABLE = "kb_record_search_map"
RECORD_TABLE = "kb_errorrecord"
DEFER_TABLE = "kb_record_fts_defer"
REINDEX_CHUNK = 900  # ids per statement (below SQLite's oldest bound-parameter limit)

# (FTS column, record column, bm25 weight). ``record_id`` is stored, not indexed.
FTS_COLUMNS: list[tuple[str, str, float]] = [
    ("message", "error_message", 10.0),
    ("class", "error_class", 5.0),
    ("code", "error_code", 5.0),
    ("slug", "slug", 2.0),
    ("documentation", "documentation", 1.0),
]
SEARCH_FIELDS = [col for _fts, col, _w in FTS_COLUMNS]

_TRIGGERS = ("kb_record_fts_ai", "kb_record_fts_ad", "kb_record_fts_au")


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


def search_records(queryset: QuerySet[Any], query: str) -> QuerySet[Any]:
    """``queryset`` narrowed to records matching ``query``, best first.

    Rows carry ``search_rank`` (lower is better on SQLite, bm25; on PostgreSQL the order is
    applied by the queryset). An exact record id returns just that record.
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
    if vendor == "sqlite":
        return _sqlite_search(queryset, long_terms).filter(short)
    if vendor == "postgresql":
        return _postgres_search(queryset, query, long_terms).filter(short)
    # Any other backend: the portable substring search, unranked.
    return queryset.filter(short, *[_substring_q(t) for t in long_terms])


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


def _postgres_search(queryset: QuerySet[Any], query: str, terms: list[str]) -> QuerySet[Any]:
    # Every term a substring of the indexed document (``PG_DOCUMENT``); ``upper(%s)`` of a
    # constant folds at planning time, so the GIN index applies.
    where = [f"{PG_DOCUMENT} LIKE upper(%s)"] * len(terms)
    params = [f"%{_like_escape(t)}%" for t in terms]
    # Rank like the SQLite side's column weights: the whole query found in a field scores
    # that field's weight; among equals, the shorter message (the query is more of it)
    # first. (``word_similarity`` per hit was tried: half a second for a broad word.)
    rank: Any = Value(0.0)
    for _fts, col, weight in FTS_COLUMNS:
        rank = rank + Case(
            When(**{f"{col}__icontains": query}, then=Value(weight)),
            default=Value(0.0),
            output_field=FloatField(),
        )
    return (
        queryset.extra(where=where, params=params)  # noqa: S610 (constant SQL, bound terms)
        .annotate(search_rank=-rank)
        .order_by("search_rank", Length("error_message"), "pk")
    )


# --- index maintenance (used by the migration and after migrations) ------------------------


def _sqlite_trigger_sql() -> list[str]:
    fts_cols = ", ".join(fts for fts, _c, _w in FTS_COLUMNS)
    new_vals = ", ".join(f"coalesce(new.{col}, '')" for _f, col, _w in FTS_COLUMNS)
    changed = " OR ".join(
        ["old.id IS NOT new.id"] + [f"old.{col} IS NOT new.{col}" for _f, col, _w in FTS_COLUMNS]
    )
    update_of = ", ".join(["id", *SEARCH_FIELDS])
    drop = (
        f"DELETE FROM {FTS_TABLE} WHERE rowid IN "
        f"(SELECT fts_rowid FROM {MAP_TABLE} WHERE record_id = {{who}}.id); "
        f"DELETE FROM {MAP_TABLE} WHERE record_id = {{who}}.id;"
    )
    add = (
        f"INSERT INTO {MAP_TABLE}(record_id) VALUES (new.id); "
        f"INSERT INTO {FTS_TABLE}(rowid, record_id, {fts_cols}) VALUES ("
        f"(SELECT fts_rowid FROM {MAP_TABLE} WHERE record_id = new.id), new.id, {new_vals});"
    )
    live = f"NOT EXISTS (SELECT 1 FROM {DEFER_TABLE})"
    # Dropped first: an older database has the same triggers without the ``WHEN`` switch.
    return [f"DROP TRIGGER IF EXISTS {name}" for name in _TRIGGERS] + [
        f"CREATE TRIGGER kb_record_fts_ai AFTER INSERT ON {RECORD_TABLE} WHEN {live} "
        f"BEGIN {drop.format(who='new')} {add} END",
        f"CREATE TRIGGER kb_record_fts_ad AFTER DELETE ON {RECORD_TABLE} WHEN {live} "
        f"BEGIN {drop.format(who='old')} END",
        f"CREATE TRIGGER kb_record_fts_au AFTER UPDATE OF {update_of} "
        f"ON {RECORD_TABLE} WHEN ({changed}) AND {live} "
        f"BEGIN {drop.format(who='old')} {add} END",
    ]


def _sqlite_create_sql() -> list[str]:
    fts_cols = ", ".join(fts for fts, _c, _w in FTS_COLUMNS)
    return [
        f"CREATE TABLE IF NOT EXISTS {MAP_TABLE} ("
        "fts_rowid INTEGER PRIMARY KEY, record_id varchar(64) NOT NULL UNIQUE)",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
        f"record_id UNINDEXED, {fts_cols}, tokenize='trigram')",
        f"CREATE TABLE IF NOT EXISTS {DEFER_TABLE} (deferred INTEGER NOT NULL)",
        f"DELETE FROM {DEFER_TABLE}",
        *_sqlite_trigger_sql(),
    ]


def _sqlite_reindex_sql(count: int) -> list[str]:
    """Drop and re-add the index rows of ``count`` records (ids bound in each statement)."""
    fts_cols = ", ".join(fts for fts, _c, _w in FTS_COLUMNS)
    vals = ", ".join(f"coalesce(r.{col}, '')" for _f, col, _w in FTS_COLUMNS)
    ids = ", ".join(["%s"] * count)
    return [
        f"DELETE FROM {FTS_TABLE} WHERE rowid IN "
        f"(SELECT fts_rowid FROM {MAP_TABLE} WHERE record_id IN ({ids}))",
        f"DELETE FROM {MAP_TABLE} WHERE record_id IN ({ids})",
        f"INSERT INTO {MAP_TABLE}(record_id) SELECT id FROM {RECORD_TABLE} WHERE id IN ({ids})",
        f"INSERT INTO {FTS_TABLE}(rowid, record_id, {fts_cols}) "
        f"SELECT m.fts_rowid, r.id, {vals} FROM {RECORD_TABLE} r "
        f"JOIN {MAP_TABLE} m ON m.record_id = r.id WHERE r.id IN ({ids})",
    ]


def _reindex(cursor: Any, ids: Sequence[str]) -> None:
    for start in range(0, len(ids), REINDEX_CHUNK):
        chunk = list(ids[start : start + REINDEX_CHUNK])
        for sql in _sqlite_reindex_sql(len(chunk)):
            cursor.execute(sql, chunk)


@contextmanager
def search_index_deferred(connection: Any = None) -> Iterator[Callable[[Sequence[str]], None]]:
    """For bulk writes inside a transaction: yields ``reindex(ids)``.

    On SQLite the triggers stand down for this transaction's writes to ``kb_errorrecord``;
    the caller must call ``reindex`` with the id of every record it inserted, updated or
    deleted before the block ends (set-based, much cheaper than a trigger per row). On
    other backends (and outside a transaction) nothing is deferred: ``reindex`` does nothing.
    """
    connection = connection or default_connection
    if connection.vendor != "sqlite" or not connection.in_atomic_block:
        yield lambda ids: None
        return
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {DEFER_TABLE}(deferred) VALUES (1)")
        try:
            yield lambda ids: _reindex(cursor, ids)
        except BaseException:
            # The transaction's rollback removes the row anyway; removed here too, so a
            # caller that swallows the error cannot leave the triggers off.
            with suppress(DatabaseError):
                cursor.execute(f"DELETE FROM {DEFER_TABLE}")
            raise
        cursor.execute(f"DELETE FROM {DEFER_TABLE}")


def _sqlite_rebuild_sql() -> list[str]:
    fts_cols = ", ".join(fts for fts, _c, _w in FTS_COLUMNS)
    vals = ", ".join(f"coalesce(r.{col}, '')" for _f, col, _w in FTS_COLUMNS)
    return [
        f"DELETE FROM {FTS_TABLE}",
        f"DELETE FROM {MAP_TABLE}",
        f"INSERT INTO {MAP_TABLE}(record_id) SELECT id FROM {RECORD_TABLE} ORDER BY id",
        f"INSERT INTO {FTS_TABLE}(rowid, record_id, {fts_cols}) "
        f"SELECT m.fts_rowid, r.id, {vals} FROM {RECORD_TABLE} r "
        f"JOIN {MAP_TABLE} m ON m.record_id = r.id",
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')",
    ]


# PostgreSQL: one GIN trigram index over all searched fields joined in one upper-cased
# document. A term is then one ``LIKE`` on one expression, which the index answers for
# selective terms; for a broad word the planner scans, and one ``upper()`` per row costs a
# fifth of five. (Immutable parts only: ``||`` and ``coalesce``, not ``concat_ws``.)
PG_DOCUMENT = "upper({})".format(
    " || ' ' || ".join(f'coalesce("{RECORD_TABLE}"."{col}"::text, \'\')' for col in SEARCH_FIELDS)
)
PG_INDEXES = [("kb_record_trgm_document", PG_DOCUMENT)]

# Browse indexes (both backends). SQLite stores a record's columns in one row, often
# kilobytes of source and analysis text spilling onto overflow pages, so reading ``status``
# or ``repo`` through the table is slow; these covering indexes answer lists, counts, tag
# pages, facets and the FTS join from the index alone:
# - ``kb_record_listing``: the published list in its display order, with the facet
#   columns, so a facet filter is checked in the index while walking it (no sort, no row
#   reads; it replaced ``kb_record_list``, which made every facet filter read rows);
# - ``kb_record_browse``: every column a filter, facet or list order needs, by id, for the
#   join from ``kb_recordtag`` / ``kb_record_fts`` and for facet scans.
RETIRED_INDEXES = ["kb_record_list"]
BROWSE_INDEXES = [
    (
        "kb_record_listing",
        "status, repo, slug, id, severity, error_type, error_class, handling_strategy",
    ),
    (
        "kb_record_browse",
        "id, status, repo, slug, severity, error_type, error_class, handling_strategy",
    ),
]


def _browse_index_sql() -> list[str]:
    return [f"DROP INDEX IF EXISTS {name}" for name in RETIRED_INDEXES] + [
        f"CREATE INDEX IF NOT EXISTS {name} ON {RECORD_TABLE} ({cols})"
        for name, cols in BROWSE_INDEXES
    ]


def _postgres_create_sql() -> list[str]:
    return [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        *(
            f"CREATE INDEX IF NOT EXISTS {name} ON {RECORD_TABLE} USING gin (({expr}) gin_trgm_ops)"
            for name, expr in PG_INDEXES
        ),
    ]


def create_search_index(schema_editor: Any) -> None:
    """Create the search structures for the current backend and fill them (migration)."""
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for sql in _sqlite_create_sql() + _sqlite_rebuild_sql():
            schema_editor.execute(sql, params=None)
    elif vendor == "postgresql":
        for sql in _postgres_create_sql():
            schema_editor.execute(sql, params=None)
    for sql in _browse_index_sql():
        schema_editor.execute(sql, params=None)


def drop_search_index(schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for name, _cols in BROWSE_INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}", params=None)
    if vendor == "sqlite":
        for trigger in _TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger}", params=None)
        schema_editor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}", params=None)
        schema_editor.execute(f"DROP TABLE IF EXISTS {MAP_TABLE}", params=None)
        schema_editor.execute(f"DROP TABLE IF EXISTS {DEFER_TABLE}", params=None)
    elif vendor == "postgresql":
        for name, _col in PG_INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}", params=None)


def search_index_missing(connection: Any = None) -> list[str]:
    """Names of the search structures missing on this database (empty: all in place)."""
    connection = connection or default_connection
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index')"
            )
            present = {row[0] for row in cursor.fetchall()}
            wanted = [
                FTS_TABLE,
                MAP_TABLE,
                DEFER_TABLE,
                *_TRIGGERS,
                *(n for n, _c in BROWSE_INDEXES),
            ]
        elif connection.vendor == "postgresql":
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [RECORD_TABLE])
            present = {row[0] for row in cursor.fetchall()}
            wanted = [name for name, _col in PG_INDEXES] + [n for n, _c in BROWSE_INDEXES]
        else:
            return []
    return [name for name in wanted if name not in present]


def install_search_triggers(schema_editor: Any) -> None:
    """(Re)create the SQLite triggers and their switch table, without refilling (migration)."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in _sqlite_create_sql():
            schema_editor.execute(sql, params=None)


def ensure_search_index_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """``post_migrate`` receiver: put back what a table rebuild dropped (see module doc)."""
    from django.db import connections as all_connections

    connection = all_connections[using]
    if RECORD_TABLE in connection.introspection.table_names():
        ensure_search_index(connection)


def ensure_search_index(connection: Any = None, *, rebuild: bool = False) -> bool:
    """Recreate missing search structures (and refill the SQLite index); True if it acted.

    Idempotent and cheap when all is in place: safe to call from ``post_migrate``.
    """
    connection = connection or default_connection
    missing = search_index_missing(connection)
    if not missing and not rebuild:
        return False
    fts_intact = not rebuild and all(n in {i for i, _c in BROWSE_INDEXES} for n in missing)
    with connection.cursor() as cursor:
        if fts_intact:  # only browse indexes to add: no need to refill the text index
            for sql in _browse_index_sql():
                cursor.execute(sql)
            return True
        if connection.vendor == "sqlite":
            for sql in _sqlite_create_sql() + _sqlite_rebuild_sql():
                cursor.execute(sql)
        elif connection.vendor == "postgresql":
            for sql in _postgres_create_sql():
                cursor.execute(sql)
        for sql in _browse_index_sql():
            cursor.execute(sql)
    return True
