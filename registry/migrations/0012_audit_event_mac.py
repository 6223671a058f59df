"""Audit events carry a MAC made when they are written (registry.services.audit_auth).

``mac`` and ``actor_ref`` are new columns of the append-only table (the audit
trigger keeps them as written); events already there have none and stay as
the chain proved them. ``mac`` defaults to "" in the database too, so a
process of the previous release still writing during an upgrade is not
refused (its events have no MAC: see docs/audit.md on upgrading).
``authenticated_since`` on the head marks where the sealer starts to refuse
events without one.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0011_tool_definition_changed_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditchainhead",
            name="authenticated_since",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="actor_ref",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="mac",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
    ]
