"""Compiled matchers stored in the database for every host (kb/matching/models.py)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0016_cache_table"),
    ]

    operations = [
        migrations.CreateModel(
            name="MatcherBlob",
            fields=[
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("size", models.BigIntegerField()),
                ("parts", models.PositiveIntegerField()),
                ("sha256", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("used_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "verbose_name": "stored matcher",
            },
        ),
        migrations.CreateModel(
            name="MatcherBlobPart",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("index", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                (
                    "blob",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="kb.matcherblob",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("blob", "index"), name="kb_matcherblobpart_unique"
                    )
                ],
            },
        ),
    ]
