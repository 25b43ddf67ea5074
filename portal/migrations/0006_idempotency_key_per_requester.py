from django.db import migrations, models
from django.db.models import Case, CharField, F, Value, When
from django.db.models.functions import Cast, Concat


def scope_existing_keys(apps, schema_editor):
    """Each keyed Action belongs to whoever asked for it, or to the system."""
    Action = apps.get_model("portal", "Action")
    Action.objects.filter(idempotency_key__isnull=False).update(
        idempotency_scope=Case(
            When(requested_by__isnull=True, then=Value("system")),
            default=Concat(Value("user:"), Cast(F("requested_by_id"), CharField())),
        )
    )


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0005_user_source_signin_audit"),
    ]

    operations = [
        migrations.AddField(
            model_name="action",
            name="idempotency_scope",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.RunPython(scope_existing_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="action",
            name="idempotency_key",
            field=models.CharField(blank=True, max_length=128, null=True),
        ),
        migrations.AddConstraint(
            model_name="action",
            constraint=models.UniqueConstraint(
                fields=("idempotency_scope", "idempotency_key"),
                name="action_idempotency_key_per_requester",
            ),
        ),
    ]
