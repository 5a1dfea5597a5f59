"""A stored object's parts are stored by the hash of their bytes and shared between objects.

What was stored before is a cache of compiled matchers in the old layout: it is deleted
here (the next build publishes again) rather than converted, and the parts' table is made
anew under its old name.
"""

import django.utils.timezone
from django.db import migrations, models

# After the parts' table is dropped: deleting the parts' rows in this transaction would
# leave PostgreSQL's deferred foreign-key checks pending when the table is altered.
DROP_STORED = ["DELETE FROM kb_matcherblob"]


class Migration(migrations.Migration):
    dependencies = [
        ("matching", "0002_matcherblob_mac"),
    ]

    operations = [
        migrations.DeleteModel(name="MatcherBlobPart"),
        migrations.RunSQL(DROP_STORED, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveField(model_name="matcherblob", name="parts"),
        migrations.AddField(
            model_name="matcherblob", name="parts", field=models.JSONField(default=list)
        ),
        migrations.CreateModel(
            name="MatcherBlobPart",
            fields=[
                ("digest", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("size", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                ("used_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={"db_table": "kb_matcherblobpart"},
        ),
    ]
