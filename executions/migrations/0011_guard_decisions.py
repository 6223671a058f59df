"""Each execution records what its guards decided (content hash version 4 covers it)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0010_approval_reasons_input_defaults"),
    ]

    operations = [
        migrations.AddField(
            model_name="execution",
            name="guard_decisions",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="What each guard decided on this call: guard, stage, action and where in the output (never the text it found).",
            ),
        ),
    ]
