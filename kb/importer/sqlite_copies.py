"""SQLite: the rows that follow from a batch's new records are copied inside SQLite.

Each new record gets a history row (a full copy of the record) and a tag row per distinct
tag, and its new tag names become ``Tag`` rows. Sent from Python, the history rows bind
every value of every record a second time, and the tag rows cost a Python loop over every
tag plus ``IN (...)`` lookups of the names; here each is one ``INSERT ... SELECT`` from the
records the batch just inserted, which SQLite reads back from its page cache.

"Just inserted" is "rowid above the table's largest before the batch": the batch holds the
write lock, so no other writer adds rows meanwhile, and SQLite gives new rows ascending
rowids in insertion order (file order), so ``ORDER BY rowid`` keeps the order the rows
would have had from Python. The history copy checks that it copied exactly the batch's
number of rows (a mismatch raises, rolling the batch back). Tag rows follow the Python
path's rules: tag names as stored in the record's JSON ``tags``, one row per distinct name at
the position of its first occurrence, new names inserted in name order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import models


class CopyMismatch(RuntimeError):
    """The history copy did not see exactly the batch's new records."""


class NewRowCopies:
    def __init__(
        self,
        quote: Any,
        record: type[models.Model],
        history: type[models.Model],
        copied: Sequence[str],
        tail: Sequence[str],
        tag: type[models.Model],
        record_tag: type[models.Model],
    ) -> None:
        q = quote
        rec = q(record._meta.db_table)
        by_attname = {f.attname: f.column for f in history._meta.concrete_fields}
        rec_cols = {f.attname: f.column for f in record._meta.concrete_fields}
        into = ", ".join(q(by_attname[a]) for a in [*copied, *tail])
        source = ", ".join(q(rec_cols[a]) for a in copied)
        self.last_rowid_sql = f"SELECT coalesce(max(rowid), 0) FROM {rec}"
        # ``tail``: history_date, history_change_reason, history_type, history_user_id.
        self.history_sql = (
            f"INSERT INTO {q(history._meta.db_table)} ({into}) "
            f"SELECT {source}, %s, %s, %s, NULL FROM {rec} WHERE rowid > %s ORDER BY rowid"
        )
        pk = q(rec_cols[record._meta.pk.attname])  # type: ignore[union-attr]
        tags, tag_table = q(rec_cols["tags"]), q(tag._meta.db_table)
        rt = {f.attname: q(f.column) for f in record_tag._meta.concrete_fields}
        # The batch's updated records whose tags changed (ids as one JSON array) get their
        # new names in the same statement, so all new names of a batch go in in name order.
        self.new_tags_sql = (
            f"INSERT INTO {tag_table} (name) SELECT DISTINCT j.value "
            f"FROM {rec} AS r, json_each(r.{tags}) AS j "
            f"WHERE (r.rowid > %s OR r.{pk} IN (SELECT value FROM json_each(%s))) "
            f"AND j.value NOT IN (SELECT name FROM {tag_table}) ORDER BY 1"
        )
        # One row per (record, tag) at the tag's first position: the rows come in record
        # order, each record's tags in list order (``CROSS JOIN`` fixes that loop order in
        # SQLite), and a repeat of a tag within a record is the one the unique (record, tag)
        # index turns away (``OR IGNORE``: no other constraint a row here could break).
        # A ``GROUP BY`` for the first position would cost a sort of every tag row.
        self.tag_rows_sql = (
            f"INSERT OR IGNORE INTO {q(record_tag._meta.db_table)} "
            f"({rt['record_id']}, {rt['tag_id']}, {rt['position']}) "
            f"SELECT r.{pk}, t.id, j.key FROM {rec} AS r CROSS JOIN json_each(r.{tags}) AS j "
            f"CROSS JOIN {tag_table} AS t ON t.name = j.value WHERE r.rowid > %s"
        )

    def last_rowid(self, cursor: Any) -> int:
        cursor.execute(self.last_rowid_sql)
        return int(cursor.fetchone()[0])

    def history(self, cursor: Any, after: int, values: Sequence[Any], expected: int) -> None:
        """History rows of the records above rowid ``after``; ``values``: the tail
        columns but the user (date, reason, type)."""
        cursor.execute(self.history_sql, [*values, after])
        if cursor.rowcount != expected:
            raise CopyMismatch(f"history copy: {cursor.rowcount} rows, expected {expected}")

    def tags(self, cursor: Any, after: int, retag: Sequence[str]) -> None:
        """New tags of the records above rowid ``after`` and of the ``retag`` ids, then the
        tag rows of the records above ``after`` (``retag``'s are the caller's)."""
        cursor.execute(self.new_tags_sql, [after, json.dumps(list(retag))])
        cursor.execute(self.tag_rows_sql, [after])
