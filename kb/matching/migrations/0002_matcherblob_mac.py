"""Stored matchers are signed (an HMAC keyed by ``SECRET_KEY``) and no longer pickled.

The objects stored before this are pickles under a plain checksum: no host of this version
loads them (their names are not the ones it asks for, and they carry no MAC), so they are
deleted here rather than left for the clean-up, and the checksum column becomes the MAC's.
The SQL is held here, as every migration holds its own (docs/architecture.md).
"""

from django.db import migrations

DROP_UNSIGNED = [
    "DELETE FROM kb_matcherblobpart",  # the parts first: no cascade in the database itself
    "DELETE FROM kb_matcherblob",
]


class Migration(migrations.Migration):
    dependencies = [
        ("matching", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(DROP_UNSIGNED, reverse_sql=migrations.RunSQL.noop),
        migrations.RenameField(model_name="matcherblob", old_name="sha256", new_name="mac"),
    ]
