"""``manage.py copy_database --target URL [--source URL]``: copy every table the app keeps
from one database to another, e.g. a single host's SQLite file to PostgreSQL.

What is copied is every model's table, Django's and the apps' alike: records, tags,
curator edits and their history (simple_history's tables), the learning loop's gaps,
proposals, votes and usage, import jobs, queued tasks, and the users, groups,
permissions and content types that history rows and admin log entries point to. Rows
keep their primary keys, so every reference between them holds as it was. What is not
copied is what the target derives itself: its migration table (``migrate`` runs on the
target first), the search index (rebuilt from the copied records) and the cache.

Why rows and not ``dumpdata``/``loaddata``: both go through one serialised document or
one save per row; here rows stream from the source in primary-key order and go in as
multi-row inserts, batch by batch, in one transaction on the target, so a failed copy
leaves the target as it was. They go in "raw" (the path ``loaddata`` takes): timestamps
such as ``created_at``/``updated_at`` keep their stored values instead of being stamped
with the time of the copy, and no signal fires (no history row is written for a copied
row; the copied history is the history). Afterwards PostgreSQL's sequences are moved past
the copied ids (``sqlsequencereset``), so the next insert does not collide.

The check that the copy is whole: every table's row count, and the content hash of the
records (``kb.records.exporter.content_hash``, which covers what ``export_records`` writes plus
the curation state), equal on both sides; the command fails otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice
from typing import Any

import dj_database_url
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.management.color import no_style
from django.core.serializers import sort_dependencies
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Model
from django.db.utils import load_backend

from kb.records.exporter import content_hash
from kb.records.models import ErrorRecord
from kb.records.search_index import ensure_search_index, search_index_deferred

SOURCE, TARGET = "copy_source", "copy_target"
# Rows per insert, bounded again by the backend's limit on query parameters.
BATCH = 500
# Tables that must be empty on the target unless --replace: they hold what people made.
# (migrate itself fills content types, permissions and the curators group: those are
# replaced by the source's rows whatever the target held.)
PRECIOUS = ("kb.ErrorRecord", "kb.HistoricalErrorRecord", "auth.User")


def register(alias: str, url_or_alias: str) -> str:
    """The alias of a database given as a ``DATABASE_URL`` or as a configured alias.

    A URL becomes a connection of this process only (it joins no settings): nothing else
    in the process sees it, and ``forget`` drops it. A SQLite target gets the default
    database's options when that is SQLite too (page size, WAL, foreign keys:
    ``kb/settings.py``), so the copy is laid out as the app would have created it.
    """
    if url_or_alias in settings.DATABASES:
        return url_or_alias
    config = dj_database_url.parse(url_or_alias)
    default = settings.DATABASES[DEFAULT_DB_ALIAS]
    if config["ENGINE"] == default["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = dict(default.get("OPTIONS", {}))
    configured = connections.configure_settings({DEFAULT_DB_ALIAS: default, alias: config})
    connections[alias] = load_backend(config["ENGINE"]).DatabaseWrapper(configured[alias], alias)
    return alias


def forget(alias: str) -> None:
    """Close and drop an alias ``register`` added (a configured one stays as it was)."""
    if alias in settings.DATABASES:
        return
    connections[alias].close()
    del connections[alias]


def same_database(a: str, b: str) -> bool:
    x, y = connections[a].settings_dict, connections[b].settings_dict
    keys = ("ENGINE", "NAME", "HOST", "PORT")
    return all(str(x.get(k) or "") == str(y.get(k) or "") for k in keys)


def unapplied(alias: str) -> list[str]:
    """Migrations the database at ``alias`` lacks (empty: its schema is this code's)."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{m.app_label}.{m.name}" for m, _backwards in plan]


def copied_models() -> list[type[Model]]:
    """Every table a model owns, parents before the rows that point to them (foreign keys
    are checked at commit on both backends, so the order is for clarity, not for them)."""
    ordered = sort_dependencies([(config, None) for config in apps.get_app_configs()], True)
    out: list[type[Model]] = []
    for model in ordered:
        out.append(model)
        out.extend(
            f.remote_field.through  # set on every many-to-many field once models are loaded
            for f in model._meta.local_many_to_many
            if f.remote_field.through is not None
        )
    return [
        m
        for m in dict.fromkeys(out)
        if m._meta.managed and not m._meta.proxy and not m._meta.swapped
    ]


def batches(rows: Iterator[Model], size: int) -> Iterator[list[Model]]:
    while batch := list(islice(rows, size)):
        yield batch


def copy_table(model: type[Model], source: str, target: str, size: int) -> int:
    """Stream ``model``'s rows from ``source`` into ``target``, keeping every value."""
    fields = list(model._meta.concrete_fields)
    ops = connections[target].ops
    rows = model._base_manager.using(source).order_by("pk").iterator(chunk_size=size)
    count = 0
    for batch in batches(rows, size):
        step = max(1, min(size, ops.bulk_batch_size(fields, batch)))
        for start in range(0, len(batch), step):
            # raw=True: the values as stored (no auto_now stamping), as loaddata inserts.
            # ``_insert`` is the private QuerySet call loaddata's path uses; not in the stubs.
            model._base_manager.using(target)._insert(  # type: ignore[attr-defined]
                batch[start : start + step], fields=fields, using=target, raw=True
            )
        count += len(batch)
    return count


def counts(models: list[type[Model]], alias: str) -> dict[str, int]:
    return {m._meta.label: m._base_manager.using(alias).count() for m in models}


class Command(BaseCommand):
    help = (
        "Copy every table of the app (records, curator history, learning loop, users) from "
        "the source database (default: DATABASE_URL) to an empty target database, then "
        "check both hold the same."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--target", required=True, help="DATABASE_URL (or alias) to fill")
        parser.add_argument(
            "--source", default=DEFAULT_DB_ALIAS, help="DATABASE_URL or alias (default: the app's)"
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Replace what the target holds (refused by default when it has records or users).",
        )
        parser.add_argument("--batch-size", type=int, default=BATCH)
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        self.verbosity = options["verbosity"]
        source = register(SOURCE, options["source"])
        target = register(TARGET, options["target"])
        try:
            summary = self.run(source, target, options)
        finally:
            forget(source)
            forget(target)
        if options["json"]:
            self.stdout.write(json.dumps(summary, sort_keys=True))
        else:
            for label, n in summary["rows"].items():
                self.stdout.write(f"{label}: {n}")
            self.stdout.write(f"records content hash: {summary['content_hash']}")

    def run(self, source: str, target: str, options: dict[str, Any]) -> dict[str, Any]:
        if same_database(source, target):
            raise CommandError("source and target are the same database")
        missing = unapplied(source)
        if missing:
            raise CommandError(
                f"the source lacks {len(missing)} migration(s) ({missing[0]}, ...): "
                "migrate it first, so both sides have this code's schema"
            )
        call_command("migrate", database=target, interactive=False, verbosity=0)
        models = copied_models()
        held = counts(models, target)
        if not options["replace"] and any(held.get(label) for label in PRECIOUS):
            raise CommandError(
                "the target already holds records or users: use --replace to overwrite it"
            )
        # One read transaction on the source: on SQLite it holds one snapshot (and the
        # write lock) from the first row copied to the last check, so what is compared is
        # what was copied. On PostgreSQL stop the app's writers first (docs/deployment.md).
        with transaction.atomic(using=source):
            copied = self.copy(models, source, target, max(1, options["batch_size"]))
            return self.verify(models, source, target, copied)

    def copy(self, models: list[type[Model]], source: str, target: str, size: int) -> dict:
        connection = connections[target]
        tables = [m._meta.db_table for m in models]
        copied: dict[str, int] = {}
        with transaction.atomic(using=target):
            with search_index_deferred(connection):
                with connection.cursor() as cursor:
                    for sql in connection.ops.sql_flush(no_style(), tables, allow_cascade=True):
                        cursor.execute(sql)
                for model in models:
                    copied[model._meta.label] = copy_table(model, source, target, size)
                    if self.verbosity > 1:
                        self.stderr.write(f"copied {model._meta.label}")
            ensure_search_index(connection, rebuild=True)
            with connection.cursor() as cursor:
                for sql in connection.ops.sequence_reset_sql(no_style(), models):
                    cursor.execute(sql)
        from django.contrib.contenttypes.models import ContentType

        ContentType.objects.clear_cache()  # ids on the target are now the source's
        return copied

    def verify(self, models: list[type[Model]], source: str, target: str, copied: dict) -> dict:
        before, after = counts(models, source), counts(models, target)
        differ = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        if differ:
            raise CommandError(f"row counts differ after the copy (source, target): {differ}")
        digest = content_hash(ErrorRecord.objects.using(source))
        if digest != content_hash(ErrorRecord.objects.using(target)):
            raise CommandError("the records' content differs after the copy")
        return {"rows": after, "copied": copied, "content_hash": digest}
