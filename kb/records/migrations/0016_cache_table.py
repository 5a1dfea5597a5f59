"""The database cache's table comes with ``migrate``: the one set-up step every Django
operator runs gives a working app (``createcachetable`` is no longer a separate step).

Django's own ``createcachetable`` logic makes it (same columns and index), for the table
the default cache uses (``kb_cache``, settings ``CACHES``); it is made even when
``CACHE_URL`` selects Redis, so switching back needs no extra step either.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "kb_cache"


def create(apps: Any, schema_editor: Any) -> None:
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def drop(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if TABLE in connection.introspection.table_names():
        schema_editor.execute(f"DROP TABLE {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("kb", "0015_loop_tallies")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
