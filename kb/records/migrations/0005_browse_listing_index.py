"""Replace the list index with one that also holds the facet columns.

With ``kb_record_list`` a facet filter read every record row; ``kb_record_listing`` answers
it from the index (no model state until 0013 declares it; both backends).
"""

from django.db import migrations

LISTING = "status, repo, slug, id, severity, error_type, error_class, handling_strategy"


def forwards(apps, schema_editor):
    schema_editor.execute("DROP INDEX IF EXISTS kb_record_list", params=None)
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS kb_record_listing ON kb_errorrecord ({LISTING})",
        params=None,
    )


def backwards(apps, schema_editor):
    schema_editor.execute("DROP INDEX IF EXISTS kb_record_listing", params=None)
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS kb_record_list ON kb_errorrecord (status, repo, slug, id)",
        params=None,
    )


class Migration(migrations.Migration):
    dependencies = [("kb", "0004_curators_group")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
