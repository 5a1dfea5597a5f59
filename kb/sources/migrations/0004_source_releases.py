"""A source can name its releases (a tag pattern and separator, or a version range for
pypi:NAME) and the oldest to learn: a learn then walks them all."""

from django.db import migrations, models

RELEASES_HELP = (
    "Learn every release: a tag pattern with one * (rel_*, v*) for a git repository, a "
    "version range (>=1.11,<2.1) for pypi:NAME; empty: one revision."
)
SEPARATOR_HELP = (
    "What separates a tag's version numbers (_ for rel_1_3_0); empty: read from the tags."
)


class Migration(migrations.Migration):
    dependencies = [("sources", "0003_source_web_url_help")]

    operations = [
        migrations.AddField(
            model_name="source",
            name="release_separator",
            field=models.CharField(blank=True, help_text=SEPARATOR_HELP, max_length=1),
        ),
        migrations.AddField(
            model_name="source",
            name="releases",
            field=models.CharField(blank=True, help_text=RELEASES_HELP, max_length=200),
        ),
        migrations.AddField(
            model_name="source",
            name="since",
            field=models.CharField(
                blank=True, help_text="The oldest release to learn (a version).", max_length=100
            ),
        ),
    ]
