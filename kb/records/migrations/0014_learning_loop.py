"""The learning loop's tables: gaps and their word postings, proposals, votes, usage per day
(kb/loop/models.py says what each keeps and what none ever does)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0013_browse_indexes_on_the_model"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Gap",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(db_index=True, max_length=64, unique=True)),
                ("template", models.TextField()),
                ("count", models.PositiveIntegerField(default=0)),
                ("first_seen", models.DateTimeField()),
                ("last_seen", models.DateTimeField()),
                (
                    "samples",
                    models.JSONField(blank=True, default=list, help_text="Redacted error lines."),
                ),
                (
                    "nearest",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text='[{"record_id": ..., "similarity": ...}]',
                    ),
                ),
                ("closed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "closed_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="closed_gaps",
                        to="kb.errorrecord",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="GapWord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("word", models.CharField(max_length=64)),
                (
                    "gap",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="words",
                        to="kb.gap",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Proposal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "field",
                    models.CharField(
                        choices=[
                            ("solutions", "Solution step"),
                            ("triggerScenarios", "Trigger"),
                            ("commonSituations", "Common situation"),
                            ("documentation", "Note"),
                            ("preventionTips", "Prevention tip"),
                        ],
                        max_length=32,
                    ),
                ),
                ("text", models.TextField()),
                ("author", models.CharField(blank=True, max_length=100)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("accepted", "Accepted"),
                            ("rejected", "Rejected"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("decided_at", models.DateTimeField(blank=True, null=True)),
                (
                    "decided_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "record",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="proposals",
                        to="kb.errorrecord",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="UsageDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("record_id", models.CharField(blank=True, max_length=64)),
                ("day", models.DateField()),
                ("hits", models.PositiveIntegerField(default=0)),
                ("misses", models.PositiveIntegerField(default=0)),
            ],
            options={
                "indexes": [
                    models.Index(fields=["record_id", "day", "hits"], name="kb_usageday_hits")
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("record_id", "day"), name="kb_usageday_unique")
                ],
            },
        ),
        migrations.CreateModel(
            name="Vote",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField()),
                ("voter", models.CharField(max_length=64)),
                (
                    "verdict",
                    models.CharField(
                        choices=[
                            ("fixed", "This fixed it"),
                            ("not_fixed", "Didn't help"),
                            ("wrong_match", "Wrong match"),
                        ],
                        max_length=16,
                    ),
                ),
                ("step", models.PositiveSmallIntegerField(blank=True, null=True)),
                (
                    "record",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="votes",
                        to="kb.errorrecord",
                    ),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="gap",
            index=models.Index(fields=["closed_at", "-count"], name="kb_gap_open_count"),
        ),
        migrations.AddIndex(
            model_name="gap",
            index=models.Index(fields=["-count"], name="kb_gap_count"),
        ),
        migrations.AddConstraint(
            model_name="gapword",
            constraint=models.UniqueConstraint(fields=("word", "gap"), name="kb_gapword_unique"),
        ),
        migrations.AddIndex(
            model_name="proposal",
            index=models.Index(fields=["status", "created_at"], name="kb_proposal_status"),
        ),
        migrations.AddIndex(
            model_name="vote",
            index=models.Index(fields=["record", "verdict"], name="kb_vote_record"),
        ),
        migrations.AddIndex(
            model_name="vote",
            index=models.Index(fields=["verdict", "record"], name="kb_vote_verdict"),
        ),
        migrations.AddIndex(
            model_name="vote",
            index=models.Index(fields=["day"], name="kb_vote_day"),
        ),
        migrations.AddConstraint(
            model_name="vote",
            constraint=models.UniqueConstraint(
                condition=models.Q(("step__isnull", False)),
                fields=("voter", "record", "step", "day"),
                name="kb_vote_one_per_step_day",
            ),
        ),
        migrations.AddConstraint(
            model_name="vote",
            constraint=models.UniqueConstraint(
                condition=models.Q(("step__isnull", True)),
                fields=("voter", "record", "day"),
                name="kb_vote_one_per_day",
            ),
        ),
    ]
