from django.db import migrations, models


def from_updated_at(apps, schema_editor):
    Tool = apps.get_model("registry", "Tool")
    Tool.objects.filter(definition_changed_at__isnull=True).update(
        definition_changed_at=models.F("updated_at")
    )


class Migration(migrations.Migration):
    dependencies = [("registry", "0010_mcp_env_encrypted")]

    operations = [
        migrations.AddField(
            model_name="tool",
            name="definition_changed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(from_updated_at, migrations.RunPython.noop),
    ]
