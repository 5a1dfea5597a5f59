"""A source's web URL, left empty, comes from a git repository's GitHub origin remote: the
field's help says so."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0002_curators_learn"),
    ]

    operations = [
        migrations.AlterField(
            model_name="source",
            name="web_url",
            field=models.URLField(
                blank=True,
                help_text="The repository's web page (https://github.com/owner/name) for links "
                "to each site; empty: a git repository's GitHub origin remote, else no link.",
            ),
        ),
    ]
