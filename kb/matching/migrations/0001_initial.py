"""The compiled-matcher store's tables, created by the records app's ``0017``; this takes
them over in the migration state only (``kb.0019_move_loop_and_store_out``)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("kb", "0019_move_loop_and_store_out"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="MatcherBlob",
                    fields=[
                        (
                            "name",
                            models.CharField(max_length=100, primary_key=True, serialize=False),
                        ),
                        ("size", models.BigIntegerField()),
                        ("parts", models.PositiveIntegerField()),
                        ("sha256", models.CharField(max_length=64)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("used_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "verbose_name": "stored matcher",
                        "db_table": "kb_matcherblob",
                    },
                ),
                migrations.CreateModel(
                    name="MatcherBlobPart",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("index", models.PositiveIntegerField()),
                        ("data", models.BinaryField()),
                        (
                            "blob",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="matching.matcherblob",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "kb_matcherblobpart",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("blob", "index"), name="kb_matcherblobpart_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
