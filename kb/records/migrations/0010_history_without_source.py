"""History rows no longer copy ``source_code`` (see ``ErrorRecord.history``).

The snippet is provenance: never curated, kept as it is when a curator reverts to an older
version, and fixed by the versioned ``github_url``, ``analyzed_sha``, ``file_path`` and line
range. At 70% of a record's bytes, its copy in every history row doubled what an import
wrote. The column goes; nothing read it.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0009_importjob_heartbeat"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="historicalerrorrecord",
            name="source_code",
        ),
    ]
