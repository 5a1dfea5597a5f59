"""Search index upkeep: keep in step, check and repair what ``kb.browse.search`` reads.

Split from the query side so that stays small: the importer's set-based batch indexing
(``search_index_deferred``) and repairs call these, and the migrations hold copies of its
SQL; see ``kb.browse.search`` for how the SQLite triggers and the PostgreSQL trigram index
work.

The migrations create everything (``0002`` and ``0007``; ``0013`` repairs a database whose
triggers were lost), so ``manage.py migrate`` alone gives a working search. Django's SQLite
schema editor rebuilds ``kb_errorrecord`` for some ``AlterField``s (copy, drop, rename): the
model's indexes come back with it, its triggers do not. A migration that rebuilds the table
must therefore end with a ``RunPython`` that recreates the triggers from SQL copied into it
(as ``0007`` holds its own): migrations never import this module, so a change here does not
change what an old migration does. ``tests/test_search.py`` checks that the structures are
whole after all migrations, and after migrating back and forth, and that no migration
imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError
from django.db import connection as default_connection

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


def _sqlite_reindex_after_sql() -> list[str]:
    """``_sqlite_reindex_sql`` for the records with a rowid above a bound (one parameter):
    a batch's new records, with no list of ids to bind and look up."""
    fts_cols = ", ".join(fts for fts, _c, _w in FTS_COLUMNS)
    vals = ", ".join(f"coalesce(r.{col}, '')" for _f, col, _w in FTS_COLUMNS)
    new_ids = f"SELECT id FROM {RECORD_TABLE} WHERE rowid > %s"
    return [
        f"DELETE FROM {FTS_TABLE} WHERE rowid IN "
        f"(SELECT fts_rowid FROM {MAP_TABLE} WHERE record_id IN ({new_ids}))",
        f"DELETE FROM {MAP_TABLE} WHERE record_id IN ({new_ids})",
        # NOT INDEXED: by rowid range, then sorted (not a walk of the whole id index).
        f"INSERT INTO {MAP_TABLE}(record_id) SELECT id FROM {RECORD_TABLE} NOT INDEXED "
        "WHERE rowid > %s ORDER BY id",
        f"INSERT INTO {FTS_TABLE}(rowid, record_id, {fts_cols}) "
        f"SELECT m.fts_rowid, r.id, {vals} FROM {RECORD_TABLE} r "
        f"JOIN {MAP_TABLE} m ON m.record_id = r.id WHERE r.rowid > %s "
        # In rowid order: FTS5 flushes its pending terms whenever a rowid is not above
        # the last one, which here cost four times the insert itself.
        "ORDER BY m.fts_rowid",
    ]


def _reindex(cursor: Any, ids: Sequence[str], after_rowid: int | None = None) -> None:
    if after_rowid is not None:
        for sql in _sqlite_reindex_after_sql():
            cursor.execute(sql, [after_rowid])
    for start in range(0, len(ids), REINDEX_CHUNK):
        chunk = list(ids[start : start + REINDEX_CHUNK])
        for sql in _sqlite_reindex_sql(len(chunk)):
            cursor.execute(sql, chunk)


@contextmanager
def search_index_deferred(connection: Any = None) -> Iterator[Callable[..., None]]:
    """For bulk writes inside a transaction: yields ``reindex(ids, after_rowid=None)``.

    On SQLite the triggers stand down for this transaction's writes to ``kb_errorrecord``;
    the caller must call ``reindex`` with the id of every record it inserted, updated or
    deleted before the block ends (set-based, much cheaper than a trigger per row), or
    give the records it inserted as ``after_rowid``: every record with a larger rowid. On
    other backends (and outside a transaction) nothing is deferred: ``reindex`` does nothing.
    """
    connection = connection or default_connection
    if connection.vendor != "sqlite" or not connection.in_atomic_block:
        yield lambda ids, after_rowid=None: None
        return
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {DEFER_TABLE}(deferred) VALUES (1)")
        try:
            yield lambda ids, after_rowid=None: _reindex(cursor, ids, after_rowid)
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
# selective terms; for a broad word the planner scans, and one ``upper()`` per row is
# cheaper than one per field. (Immutable parts only: ``||`` and ``coalesce``, not
# ``concat_ws``.) Meta.indexes cannot declare it for one backend only, so the migrations do.
PG_DOCUMENT = "upper({})".format(
    " || ' ' || ".join(f'coalesce("{RECORD_TABLE}"."{col}"::text, \'\')' for col in SEARCH_FIELDS)
)
PG_INDEXES = [("kb_record_trgm_document", PG_DOCUMENT)]


def _postgres_create_sql() -> list[str]:
    return [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        *(
            f"CREATE INDEX IF NOT EXISTS {name} ON {RECORD_TABLE} USING gin (({expr}) gin_trgm_ops)"
            for name, expr in PG_INDEXES
        ),
    ]


def search_index_missing(connection: Any = None) -> list[str]:
    """Names of the search structures missing on this database (empty: all in place)."""
    connection = connection or default_connection
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index')"
            )
            present = {row[0] for row in cursor.fetchall()}
            wanted = [FTS_TABLE, MAP_TABLE, DEFER_TABLE, *_TRIGGERS]
        elif connection.vendor == "postgresql":
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [RECORD_TABLE])
            present = {row[0] for row in cursor.fetchall()}
            wanted = [name for name, _col in PG_INDEXES]
        else:
            return []
    return [name for name in wanted if name not in present]


def ensure_search_index(connection: Any = None, *, rebuild: bool = False) -> bool:
    """Recreate missing search structures (and refill the SQLite index); True if it acted.

    Idempotent, and a single catalogue read when all is in place; ``rebuild`` refills the
    index even then (a repair after writes that went around the triggers).
    """
    connection = connection or default_connection
    if not search_index_missing(connection) and not rebuild:
        return False
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for sql in _sqlite_create_sql() + _sqlite_rebuild_sql():
                cursor.execute(sql)
        elif connection.vendor == "postgresql":
            for sql in _postgres_create_sql():
                cursor.execute(sql)
    return True
