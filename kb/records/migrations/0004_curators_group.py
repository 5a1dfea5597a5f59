"""The "Curators" group: staff who edit, publish, retire, tag and import records.

Just what curation needs: view/add/change records, tags and import jobs, and view the
record history. No delete, and nothing on users or groups. Permissions are created here
(they normally appear only after ``migrate`` finishes) so the group is complete on a
fresh database.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "Curators"
PERMISSIONS = [
    ("kb", "view_errorrecord"),
    ("kb", "add_errorrecord"),
    ("kb", "change_errorrecord"),
    ("kb", "view_tag"),
    ("kb", "add_tag"),
    ("kb", "change_tag"),
    ("kb", "view_importjob"),
    ("kb", "add_importjob"),
    ("kb", "change_importjob"),
    ("kb", "view_historicalerrorrecord"),
]


def create_group(apps, schema_editor):
    # The database being migrated, which is not the default one under `migrate --database`
    # (manage.py copy_database migrates its target so).
    db = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=db)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(db).get_or_create(name=GROUP)
    perms = [
        Permission.objects.using(db).get(content_type__app_label=app, codename=codename)
        for app, codename in PERMISSIONS
    ]
    group.permissions.add(*perms)


def remove_group(apps, schema_editor):
    db = schema_editor.connection.alias
    apps.get_model("auth", "Group").objects.using(db).filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0003_import_job"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
