"""Audit events get an identity, covered by their MAC; checkpoints get a MAC.

``uid`` identifies an event and is covered by its MAC
(``registry.services.audit_auth``): events already in the table keep none and
verify as before. It is added without a default so they stay NULL (a
callable default would give every existing row the same value), then the
model's default applies to new rows. ``identified_since`` on the head marks
where the sealer starts to refuse events without one. Checkpoints get
``mac`` and ``export_sha256`` (``registry.services.audit_checkpoint``).
"""

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("registry", "0012_audit_event_mac")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="uid",
            field=models.UUIDField(blank=True, editable=False, null=True, unique=True),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="uid",
            field=models.UUIDField(
                blank=True, default=uuid.uuid4, editable=False, null=True, unique=True
            ),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="identified_since",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditcheckpoint",
            name="export_sha256",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddField(
            model_name="auditcheckpoint",
            name="mac",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
    ]
