"""Curators add sources and learn them: the "Curators" group (kb 0004) gets view, add
and change on sources and view on learn jobs. Permissions are created here (they
normally appear only after ``migrate`` finishes) so the group is complete on a fresh
database."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "Curators"
PERMISSIONS = [
    ("sources", "view_source"),
    ("sources", "add_source"),
    ("sources", "change_source"),
    ("sources", "view_learnjob"),
]


def grant(apps, schema_editor):
    db = schema_editor.connection.alias
    app_config = apps.get_app_config("sources")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=db)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(db).get_or_create(name=GROUP)
    group.permissions.add(
        *[
            Permission.objects.using(db).get(content_type__app_label=app, codename=codename)
            for app, codename in PERMISSIONS
        ]
    )


def revoke(apps, schema_editor):
    db = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for group in Group.objects.using(db).filter(name=GROUP):
        group.permissions.remove(
            *Permission.objects.using(db).filter(content_type__app_label="sources")
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0001_initial"),
        ("kb", "0004_curators_group"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
