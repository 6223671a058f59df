"""Fewer indexes on the audit log: each one costs every audited write.

Dropped: the actor foreign key's own index (``audit_actor_time_idx`` leads with
it), the plain ``action`` index (``audit_action_time_idx`` serves equality) and
the pattern-ops copy of ``request_id`` (searched by equality only). The two
kept under new names are renamed, not rebuilt, so a large audit log migrates
in milliseconds. Django names its field indexes deterministically from the
table and column, so the old names below are the same on every installation.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "registry_auditevent"
FORWARD = {
    "postgresql": [
        "DROP INDEX IF EXISTS registry_auditevent_actor_id_4f6acf35",
        "DROP INDEX IF EXISTS registry_auditevent_action_07a6f3c7",
        "ALTER INDEX IF EXISTS registry_auditevent_action_07a6f3c7_like "
        "RENAME TO audit_action_prefix_idx",
        "DROP INDEX IF EXISTS registry_auditevent_request_id_ee65ddfc_like",
        "ALTER INDEX IF EXISTS registry_auditevent_request_id_ee65ddfc RENAME TO audit_request_idx",
        # Installations whose old indexes were named otherwise still end up complete.
        f"CREATE INDEX IF NOT EXISTS audit_action_prefix_idx ON {TABLE} "
        "(action varchar_pattern_ops)",
        f"CREATE INDEX IF NOT EXISTS audit_request_idx ON {TABLE} (request_id)",
    ],
    "default": [
        "DROP INDEX IF EXISTS registry_auditevent_actor_id_4f6acf35",
        "DROP INDEX IF EXISTS registry_auditevent_action_07a6f3c7",
        "DROP INDEX IF EXISTS registry_auditevent_request_id_ee65ddfc",
        f"CREATE INDEX IF NOT EXISTS audit_action_prefix_idx ON {TABLE} (action)",
        f"CREATE INDEX IF NOT EXISTS audit_request_idx ON {TABLE} (request_id)",
    ],
}
BACKWARD = [
    "DROP INDEX IF EXISTS audit_action_prefix_idx",
    "DROP INDEX IF EXISTS audit_request_idx",
    f"CREATE INDEX IF NOT EXISTS registry_auditevent_actor_id_4f6acf35 ON {TABLE} (actor_id)",
    f"CREATE INDEX IF NOT EXISTS registry_auditevent_action_07a6f3c7 ON {TABLE} (action)",
    f"CREATE INDEX IF NOT EXISTS registry_auditevent_request_id_ee65ddfc ON {TABLE} (request_id)",
]
BACKWARD_POSTGRESQL = [
    *BACKWARD,
    "CREATE INDEX IF NOT EXISTS registry_auditevent_action_07a6f3c7_like "
    f"ON {TABLE} (action varchar_pattern_ops)",
    "CREATE INDEX IF NOT EXISTS registry_auditevent_request_id_ee65ddfc_like "
    f"ON {TABLE} (request_id varchar_pattern_ops)",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in FORWARD.get(vendor, FORWARD["default"]):
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    for statement in BACKWARD_POSTGRESQL if postgresql else BACKWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0007_registry_generation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[
                migrations.AlterField(
                    model_name="auditevent",
                    name="action",
                    field=models.CharField(max_length=64),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="actor",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="request_id",
                    field=models.CharField(blank=True, max_length=128),
                ),
                migrations.AddIndex(
                    model_name="auditevent",
                    index=models.Index(
                        fields=["action"],
                        name="audit_action_prefix_idx",
                        opclasses=["varchar_pattern_ops"],
                    ),
                ),
                migrations.AddIndex(
                    model_name="auditevent",
                    index=models.Index(fields=["request_id"], name="audit_request_idx"),
                ),
            ],
        )
    ]
