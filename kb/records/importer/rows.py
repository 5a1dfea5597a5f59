"""Row writes for the importer: plain multi-row inserts with per-column converters.

Django's ``bulk_create`` spends most of an import in per-value ``get_db_prep_save`` calls;
here each column's converter is chosen once (JSON via ``connection.ops.adapt_json_value``,
datetimes via ``adapt_datetimefield_value``, everything else as is), which works the same
on SQLite and PostgreSQL. What is written is exactly what the ORM would write: the record
row, one history row per created or changed record (``+``/``~``, reason
``import:<file>``, no user: docs/reliability.md#r18-audit-trail), and the ``RecordTag``
index rows. On SQLite the search index is kept for the batch with set-based statements,
not a trigger per row (``kb.records.search_index.search_index_deferred``).

On SQLite new rows go in as multi-row ``INSERT ... VALUES (...), (...)`` statements of
``MAX_ROWS_PER_INSERT`` rows (the remainder row by row): ``executemany`` runs one statement
per row, and each statement on ``kb_errorrecord`` (which has triggers) opens a statement
savepoint on every virtual table of the transaction (the search index), which a statement
of many rows opens once. Same rows, same order, so the same row ids. On PostgreSQL new
rows go through ``COPY ... FROM STDIN`` (``POSTGRES_COPY``): one statement per table and
batch instead of one per row; ``benchmarks/bench_copy.py`` measures it against
``executemany`` (psycopg's batched inserts), and it stays only while it clears that
benchmark's bar. Updates stay ``executemany``: COPY only appends.

These writers stay instead of ``bulk_create`` with django-simple-history's
``bulk_create_with_history`` and ``kb.records.services.sync_tags`` because the ORM's per-value
preparation is most of that path's time (docs/importing.md; the import benchmark compares
the two).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import chain
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any, cast

from django.db import connection, models
from django.db.backends.base.operations import BaseDatabaseOperations

from kb.records.models import ErrorRecord, RecordTag, Tag
from kb.records.schema import OPTIONAL_ATTRS
from kb.records.search_index import search_index_deferred

Converter = Callable[[Any], Any]
HISTORY_REASON_MAX = 100
# SQLite multi-row inserts: rows per statement at most. Statements of this size are prepared
# once and cached by the driver; only a batch's last, shorter one is prepared anew.
MAX_ROWS_PER_INSERT = 100
# PostgreSQL: new rows through COPY rather than ``executemany`` (see ``_Table._copy``).
POSTGRES_COPY = True
ID_CHUNK = 900  # values per ``IN (...)`` lookup (below SQLite's oldest parameter limit)


def _id_chunk() -> int:
    return min(ID_CHUNK, connection.features.max_query_params or ID_CHUNK)


def _converter(field: models.Field) -> Converter | None:
    """The value-to-parameter function for one column (None: pass values through)."""
    ops = connection.ops
    kind = field.get_internal_type()
    if kind == "JSONField":
        encoder = cast(models.JSONField, field).encoder
        empty = {"[]": ops.adapt_json_value([], encoder), "{}": ops.adapt_json_value({}, encoder)}
        # Where the backend stores ``json.dumps(value)`` (SQLite), a list of strings (tags,
        # solutions, tips: most JSON an import writes) is joined here from the encoder's own
        # C string escaper: the same text, without ``json.dumps``' per-call set-up.
        plain = encoder is None and (
            type(ops).adapt_json_value is BaseDatabaseOperations.adapt_json_value
        )

        def json_value(value: Any) -> Any:
            if type(value) is list:
                if not value:
                    return empty["[]"]
                if plain:
                    try:
                        return "[" + ", ".join(map(encode_basestring_ascii, value)) + "]"
                    except TypeError:  # not all strings
                        pass
            elif not value and type(value) is dict:
                return empty["{}"]
            return ops.adapt_json_value(value, encoder)

        return json_value
    if kind == "DateTimeField":
        # Datetimes repeat a lot (one ``now`` per batch, shared analysis times): memoise.
        memo: dict[datetime, Any] = {}

        def datetime_value(value: datetime) -> Any:
            adapted = memo.get(value)
            if adapted is None:
                if len(memo) > 50_000:
                    memo.clear()
                adapted = memo[value] = ops.adapt_datetimefield_value(value)
            return adapted

        return datetime_value
    return None


def _column(field: models.Field) -> str:
    """A concrete field's column (Django types ``column`` as optional: some fields have none)."""
    assert field.column is not None
    return field.column


class _Table:
    """One table's column list and converters, in a fixed order."""

    def __init__(self, model: type[models.Model], attnames: Sequence[str]) -> None:
        by_attname = {f.attname: f for f in model._meta.concrete_fields}
        self.attnames = list(attnames)
        self.table = model._meta.db_table
        self.columns = [_column(by_attname[a]) for a in self.attnames]
        self.convert = [_converter(by_attname[a]) for a in self.attnames]
        # Values fetched in one C call; only the converted columns are visited in Python.
        get = itemgetter(*self.attnames)
        self._values = get if len(self.attnames) > 1 else lambda values: (get(values),)
        self._converted = [(i, c) for i, c in enumerate(self.convert) if c is not None]

    def row(self, values: dict[str, Any]) -> list[Any]:
        out = list(self._values(values))
        for i, conv in self._converted:
            value = out[i]
            if value is not None:
                out[i] = conv(value)
        return out

    def insert_sql(self, rows: int = 1, mark: str = "%s") -> str:
        q = connection.ops.quote_name
        cols = ", ".join(q(c) for c in self.columns)
        marks = "(" + ", ".join([mark] * len(self.columns)) + ")"
        return f"INSERT INTO {q(self.table)} ({cols}) VALUES {', '.join([marks] * rows)}"

    def insert(self, cursor: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` (in this order): see the module docstring."""
        if not rows:
            return
        if connection.vendor == "postgresql" and POSTGRES_COPY:
            self._copy(rows)
            return
        if connection.vendor != "sqlite":
            cursor.executemany(self.insert_sql(), rows)
            return
        limit = connection.features.max_query_params or 999
        per = max(1, min(MAX_ROWS_PER_INSERT, limit // len(self.columns)))
        # The driver's own cursor, in the same connection and transaction, with SQLite's
        # ``?`` marks; database errors still surface as Django's. Django's cursor would
        # rewrite ``%s`` to ``?`` with a regex pass over each (long) statement, and under
        # DEBUG its ``execute`` re-reads every parameter quoted by SQLite just to log the
        # statement. So these statements are not in ``connection.queries``.
        # Only two statements per table, so the driver's statement cache never holds a
        # compiled statement per batch remainder: full chunks of ``per`` rows, then the
        # remaining rows (fewer than ``per``) one statement each.
        full = len(rows) - len(rows) % per
        with connection.wrap_database_errors:
            raw = connection.connection.cursor()
            try:
                if full:
                    sql = self.insert_sql(per, "?")
                    for start in range(0, full, per):
                        raw.execute(sql, list(chain.from_iterable(rows[start : start + per])))
                if full < len(rows):
                    raw.executemany(self.insert_sql(1, "?"), rows[full:])
            finally:
                raw.close()

    def copy_sql(self) -> str:
        q = connection.ops.quote_name
        cols = ", ".join(q(c) for c in self.columns)
        return f"COPY {q(self.table)} ({cols}) FROM STDIN"

    def _copy(self, rows: Sequence[Sequence[Any]]) -> None:
        """PostgreSQL: the rows through ``COPY ... FROM STDIN`` (psycopg 3's
        ``cursor.copy()``), in the same connection and transaction: one statement for the
        whole batch instead of one per row, and the values streamed in COPY's text format,
        each dumped by the same psycopg adapters ``executemany`` would bind it with."""
        with connection.wrap_database_errors:
            raw = connection.connection.cursor()
            try:
                with raw.copy(self.copy_sql()) as copy:
                    for row in rows:
                        copy.write_row(row)
            finally:
                raw.close()


class RowWriter:
    """Writes batches of records given as ``{attname: python value}`` dicts."""

    def __init__(self, source: str, compared: Sequence[str] = ()) -> None:
        """``compared``: the record columns ``key`` and ``stored`` give, in this order."""
        record_fields = [f.attname for f in ErrorRecord._meta.concrete_fields]
        self.record_fields = record_fields
        self.records = _Table(ErrorRecord, record_fields)
        historical = ErrorRecord.history.model
        history_fields = [
            f.attname for f in historical._meta.concrete_fields if f.attname != "history_id"
        ]
        tail = ["history_date", "history_change_reason", "history_type", "history_user_id"]
        unknown = set(history_fields) - set(record_fields) - set(tail)
        if unknown:  # a simple_history upgrade added columns: fail loudly, not silently
            raise RuntimeError(f"unexpected history columns: {sorted(unknown)}")
        copied = [a for a in history_fields if a not in tail]
        self.history = _Table(historical, [*copied, *tail])
        self.history_from_record = [record_fields.index(a) for a in copied]
        self.reason = f"import:{source}"[:HISTORY_REASON_MAX]
        self.tags = _Table(RecordTag, ["record_id", "tag_id", "position"])
        self.tag_ids: dict[str, int] = {}
        q = connection.ops.quote_name
        pk = self.pk = _column(ErrorRecord._meta.pk)
        self.update_attnames = [a for a in record_fields if a not in {"id", "created_at"}]
        sets = ", ".join(
            f"{q(self.records.columns[record_fields.index(a)])} = %s" for a in self.update_attnames
        )
        self.update_sql = f"UPDATE {q(self.records.table)} SET {sets} WHERE {q(pk)} = %s"
        self.update_from_record = [record_fields.index(a) for a in [*self.update_attnames, "id"]]
        self.compared = list(compared)
        # Keys as raw columns (SQLite): decided once, not per record (``connection`` is a
        # thread-local proxy, a lookup per attribute).
        self.raw_keys = bool(self.compared) and connection.vendor == "sqlite"
        at = [record_fields.index(a) for a in self.compared] or [0]
        # Always a tuple: ``itemgetter`` of one name gives the bare value.
        self._compared_values: Callable[[dict[str, Any]], tuple[Any, ...]] = (
            itemgetter(*self.compared)
            if len(self.compared) > 1
            else lambda values: tuple(values[a] for a in self.compared)
        )
        self._compared_convert = [self.records.convert[i] for i in at]
        by_attname = {f.attname: f for f in ErrorRecord._meta.concrete_fields}
        # An optional field an incoming line leaves out compares as its default: equal for
        # a record that never had it, so such records keep the cheap path.
        self._absent_as = {
            a: by_attname[a].get_default() for a in self.compared if a in OPTIONAL_ATTRS
        }
        self._compared_columns = [
            (self.records.columns[i], self.records.convert[i], by_attname[a].get_internal_type())
            for i, a in zip(at, self.compared, strict=False)
        ]

    def write(
        self,
        created: Sequence[dict[str, Any]],
        updated: Sequence[dict[str, Any]],
        retag: Sequence[dict[str, Any]],
        now: datetime,
    ) -> None:
        """Insert ``created``, update ``updated``, history for both, tags for created and
        ``retag`` (updated records whose tag list changed). Call inside a transaction."""
        with connection.cursor() as cursor, search_index_deferred(connection) as reindex:
            created_rows = [self.records.row(r) for r in created]
            updated_rows = [self.records.row(r) for r in updated]
            self.records.insert(cursor, created_rows)
            if updated_rows:
                cursor.executemany(
                    self.update_sql,
                    list(map(itemgetter(*self.update_from_record), updated_rows)),
                )
            to_date = self.history.convert[self.history.attnames.index("history_date")]
            assert to_date is not None  # a DateTimeField: it always has a converter
            now_value = to_date(now)
            kinds = [("+", created_rows), ("~", updated_rows)]
            copy = itemgetter(*self.history_from_record)
            history = [
                (*copy(row), now_value, self.reason, kind, None)
                for kind, rows in kinds
                for row in rows
            ]
            self.history.insert(cursor, history)
            reindex([r["id"] for r in (*created, *updated)])
            self._write_tags(cursor, created, retag)

    def key(self, values: dict[str, Any]) -> Any:
        """The ``compared`` columns of a record as bound parameters: what ``stored`` gives
        for a stored record that is equal."""
        if not self.raw_keys:
            return None  # ``stored`` has no raw form to compare it with
        if self._absent_as and not self._absent_as.keys() <= values.keys():
            values = {**self._absent_as, **values}
        return tuple(
            v if conv is None or v is None else conv(v)
            for v, conv in zip(self._compared_values(values), self._compared_convert, strict=True)
        )

    def stored(self, ids: Sequence[str]) -> dict[str, Any]:
        """Which of ``ids`` are stored, each with its ``key`` as stored (SQLite: the columns
        as the driver returns them, datetimes as the text they are stored as), or ``None``
        where there is no cheap raw form (other backends). One query per chunk of ids."""
        q = connection.ops.quote_name
        raw = self.raw_keys
        cols = [q(self.pk)]
        if raw:
            cols += [
                f"CAST({q(c)} AS TEXT)" if conv is not None and kind == "DateTimeField" else q(c)
                for c, conv, kind in self._compared_columns
            ]
        sql = f"SELECT {', '.join(cols)} FROM {q(self.records.table)} WHERE {q(self.pk)} IN "
        found: dict[str, Any] = {}
        per = _id_chunk()
        with connection.cursor() as cursor:
            for start in range(0, len(ids), per):
                chunk = list(ids[start : start + per])
                cursor.execute(sql + "(" + ", ".join(["%s"] * len(chunk)) + ")", chunk)
                for row in cursor.fetchall():
                    found[row[0]] = tuple(row[1:]) if raw else None
        return found

    def _write_tags(
        self, cursor: Any, created: Sequence[dict[str, Any]], retag: Sequence[dict[str, Any]]
    ) -> None:
        if retag:
            RecordTag.objects.filter(record_id__in=[r["id"] for r in retag]).delete()
        records = [*created, *retag]
        self._ensure_tags(cursor, (str(name) for r in records for name in r["tags"]))
        rows = []
        for record in records:
            seen: set[str] = set()
            for position, name in enumerate(record["tags"]):
                name = str(name)
                if name in seen:
                    continue
                seen.add(name)
                rows.append([record["id"], self.tag_ids[name], position])
        self.tags.insert(cursor, rows)

    def _ensure_tags(self, cursor: Any, names: Iterable[str]) -> None:
        """Tag ids for ``names``, creating missing tags (in name order). Plain statements:
        through the ORM the ``name IN (...)`` lookups of a batch's thousands of new names
        cost more than the tag rows themselves."""
        missing = sorted(set(names) - self.tag_ids.keys())
        if not missing:
            return
        q = connection.ops.quote_name
        table = q(Tag._meta.db_table)

        per = _id_chunk()

        def lookup(names: list[str]) -> None:
            for start in range(0, len(names), per):
                chunk = names[start : start + per]
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(f"SELECT name, id FROM {table} WHERE name IN ({marks})", chunk)
                self.tag_ids.update(cursor.fetchall())

        lookup(missing)
        new = [n for n in missing if n not in self.tag_ids]
        if new:
            for start in range(0, len(new), per):
                chunk = new[start : start + per]
                values = ", ".join(["(%s)"] * len(chunk))
                # Another writer may add the same name meanwhile: keep its row.
                cursor.execute(
                    f"INSERT INTO {table} ({q('name')}) VALUES {values} ON CONFLICT DO NOTHING",
                    chunk,
                )
            lookup(new)

    def forget_tags(self) -> None:
        """Drop the cached tag ids (after a rollback they may point at nothing)."""
        self.tag_ids.clear()
