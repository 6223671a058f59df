"""Guards around calls; a write to them moves the registry generation (0007), so every
process drops the guards it holds in memory on the next request."""

import uuid

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "registry_guard"


def watch(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {TABLE};\n"
            f"CREATE TRIGGER toolhub_registry_changed AFTER INSERT OR UPDATE OR DELETE "
            f"OR TRUNCATE ON {TABLE} FOR EACH STATEMENT EXECUTE FUNCTION toolhub_registry_changed();"
        )
    elif vendor == "sqlite":
        bump = "UPDATE toolhub_registry_generation SET value = random() WHERE id = 1;"
        for n, kind in enumerate(["INSERT", "UPDATE", "DELETE"]):
            name = f"toolhub_registry_changed_{TABLE}_{n}"
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
            schema_editor.execute(f"CREATE TRIGGER {name} AFTER {kind} ON {TABLE} BEGIN {bump} END")


def unwatch(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {TABLE}")
    elif vendor == "sqlite":
        for n in range(3):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS toolhub_registry_changed_{TABLE}_{n}")


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0016_command_tools"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Guard",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        max_length=64,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-zA-Z0-9_-]{1,64}$",
                                "Use 1 to 64 characters: letters, digits, '_' or '-'.",
                                code="invalid_name",
                            )
                        ],
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("pii", "Personal data in the output"),
                            ("secrets", "Secret-shaped strings in the output"),
                            ("arguments", "Argument rules (condition, sizes)"),
                            ("injection", "Instructions in the output (heuristic)"),
                            ("python", "Operator's Python function"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "stage",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("before", "Before the call (arguments)"),
                            ("after", "After the call (output)"),
                        ],
                        help_text="Empty: the stage its kind (or its function) runs at.",
                        max_length=8,
                    ),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("deny", "Deny the call"),
                            ("require_approval", "Require approval"),
                            ("redact", "Redact what was found"),
                            ("block", "Block the output"),
                            ("flag", "Flag the result"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "order",
                    models.PositiveIntegerField(
                        default=100,
                        help_text="Lower runs first.",
                        validators=[django.core.validators.MaxValueValidator(1000000)],
                    ),
                ),
                ("config", models.JSONField(blank=True, default=dict)),
                ("is_active", models.BooleanField(default=True)),
                ("description", models.CharField(blank=True, max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "tool",
                    models.ForeignKey(
                        blank=True,
                        help_text="Empty: every tool.",
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="guards",
                        to="registry.tool",
                    ),
                ),
            ],
            options={
                "ordering": ["order", "name"],
                "indexes": [models.Index(fields=["tool", "is_active"], name="guard_tool_idx")],
            },
        ),
        migrations.RunPython(watch, unwatch),
    ]
