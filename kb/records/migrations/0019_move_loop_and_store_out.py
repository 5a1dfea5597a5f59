"""The learning loop's models move to the ``loop`` app and the compiled-matcher store's to
``matching``: state only, so no table changes (each keeps its ``kb_`` name through
``Meta.db_table``). Their content types move with them, so the permissions a group holds
and the admin's history stay attached."""

from django.db import migrations


LOOP = ("gap", "gapword", "proposal", "vote", "recordtally", "votersalt", "usageday")
STORE = ("matcherblob", "matcherblobpart")


def _relabel(apps, schema_editor, moves):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for old, new, models in moves:
        ContentType.objects.using(db).filter(app_label=old, model__in=models).update(
            app_label=new
        )


def move_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, [("kb", "loop", LOOP), ("kb", "matching", STORE)])


def restore_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, [("loop", "kb", LOOP), ("matching", "kb", STORE)])

class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0018_record_class_index'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(
                    model_name='gap',
                    name='kb_gap_open_count',
                ),
                migrations.RemoveIndex(
                    model_name='gap',
                    name='kb_gap_count',
                ),
                migrations.RemoveConstraint(
                    model_name='gapword',
                    name='kb_gapword_unique',
                ),
                migrations.RemoveConstraint(
                    model_name='matcherblobpart',
                    name='kb_matcherblobpart_unique',
                ),
                migrations.RemoveIndex(
                    model_name='proposal',
                    name='kb_proposal_status',
                ),
                migrations.RemoveIndex(
                    model_name='recordtally',
                    name='kb_tally_complaints',
                ),
                migrations.RemoveIndex(
                    model_name='usageday',
                    name='kb_usageday_hits',
                ),
                migrations.RemoveConstraint(
                    model_name='usageday',
                    name='kb_usageday_unique',
                ),
                migrations.DeleteModel(
                    name='UsageDay',
                ),
                migrations.RemoveIndex(
                    model_name='vote',
                    name='kb_vote_record',
                ),
                migrations.RemoveIndex(
                    model_name='vote',
                    name='kb_vote_day',
                ),
                migrations.RemoveConstraint(
                    model_name='vote',
                    name='kb_vote_one_per_step_day',
                ),
                migrations.RemoveConstraint(
                    model_name='vote',
                    name='kb_vote_one_per_day',
                ),
                migrations.DeleteModel(
                    name='VoterSalt',
                ),
                migrations.RemoveField(
                    model_name='gapword',
                    name='gap',
                ),
                migrations.RemoveField(
                    model_name='matcherblobpart',
                    name='blob',
                ),
                migrations.RemoveField(
                    model_name='proposal',
                    name='decided_by',
                ),
                migrations.RemoveField(
                    model_name='proposal',
                    name='record',
                ),
                migrations.RemoveField(
                    model_name='recordtally',
                    name='record',
                ),
                migrations.RemoveField(
                    model_name='vote',
                    name='record',
                ),
                migrations.DeleteModel(
                    name='Gap',
                ),
                migrations.DeleteModel(
                    name='GapWord',
                ),
                migrations.DeleteModel(
                    name='MatcherBlob',
                ),
                migrations.DeleteModel(
                    name='MatcherBlobPart',
                ),
                migrations.DeleteModel(
                    name='Proposal',
                ),
                migrations.DeleteModel(
                    name='RecordTally',
                ),
                migrations.DeleteModel(
                    name='Vote',
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
