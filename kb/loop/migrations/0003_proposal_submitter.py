"""Proposals keep who sent them as a day-salted digest of the address, so the number of
pending proposals one address has on a record can be capped (``Proposal.submitter``);
rows from before have none and count for nobody."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("loop", "0002_vote_source"),
    ]

    operations = [
        migrations.AddField(
            model_name="proposal",
            name="submitter",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
    ]
