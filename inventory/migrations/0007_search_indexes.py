from django.db import migrations

from inventory.models.search_indexes import create_search_indexes, drop_search_indexes


def create_indexes(apps, schema_editor):
    create_search_indexes(schema_editor)


def drop_indexes(apps, schema_editor):
    drop_search_indexes(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0006_spares"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
