"""Audit events get an identity; checkpoints a MAC; retention a path the triggers trust.

``uid`` identifies an event and is covered by its MAC (version 2,
``registry.services.audit_auth``): events already in the table keep none and
verify as before. It is added without a default so they stay NULL (a
callable default would give every existing row the same value), then the
model's default applies to new rows. ``identified_since`` on the head marks
where the sealer starts to refuse events without one. ``seal_mac`` is the
sealer's MAC of an event's sequence and hash (the audit trigger lets the
sealer fill it in once). Checkpoints get
``mac`` and ``export_sha256`` (``registry.services.audit_checkpoint``).

On PostgreSQL the audit trigger no longer lets any session delete events by
setting ``toolhub.retention``: only the tables' owner may, which in practice
is ``toolhub_audit_retention(cut)``, a ``SECURITY DEFINER`` function the
owner installs here. It deletes events only up to the latest checkpoint,
whose hash must be that of the event at the cut. Checkpoints themselves are
append-only, and only the owner may TRUNCATE either table (TRUNCATE fires no
row trigger). See docs/security-audit-chain.md.
"""

import importlib
import uuid

from django.db import migrations, models

TRIGGERS = importlib.import_module("registry.migrations.0006_audit_triggers")

ANY_SESSION = "    IF current_setting('toolhub.retention', true) = 'on' THEN\n"
OWNER_ONLY = (
    "    IF current_setting('toolhub.retention', true) = 'on'\n"
    "       AND current_user = (SELECT pg_catalog.pg_get_userbyid(relowner)\n"
    "                           FROM pg_catalog.pg_class WHERE oid = TG_RELID) THEN\n"
)
assert ANY_SESSION in TRIGGERS.INSTALL
# The sealer also fills in seal_mac, once, like the other chain columns.
SEAL_COLS = "ARRAY['sequence', 'prev_hash', 'hash', 'sealed_at', 'actor_id']"
SEALED_AT_KEPT = "           AND NEW.sealed_at IS NOT DISTINCT FROM OLD.sealed_at)"
assert SEAL_COLS in TRIGGERS.INSTALL and SEALED_AT_KEPT in TRIGGERS.INSTALL
GUARD = (
    TRIGGERS.INSTALL.replace(ANY_SESSION, OWNER_ONLY)
    .replace(
        SEAL_COLS, "ARRAY['sequence', 'prev_hash', 'hash', 'sealed_at', 'actor_id', 'seal_mac']"
    )
    .replace(
        SEALED_AT_KEPT,
        "           AND NEW.sealed_at IS NOT DISTINCT FROM OLD.sealed_at\n"
        "           AND NEW.seal_mac IS NOT DISTINCT FROM OLD.seal_mac)",
    )
)
GUARD_BEFORE = TRIGGERS.INSTALL

RETENTION = """
CREATE OR REPLACE FUNCTION toolhub_audit_retention(cut bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $$
DECLARE
  removed bigint;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM registry_auditcheckpoint c
    JOIN registry_auditevent e ON e.sequence = c.sequence AND e.hash = c.hash
    WHERE c.sequence = cut
      AND c.sequence = (SELECT max(sequence) FROM registry_auditcheckpoint)
  ) THEN
    RAISE EXCEPTION 'audit retention: no latest checkpoint at #% for the event there', cut
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM pg_catalog.set_config('toolhub.retention', 'on', true);
  DELETE FROM registry_auditevent WHERE sequence <= cut;
  GET DIAGNOSTICS removed = ROW_COUNT;
  PERFORM pg_catalog.set_config('toolhub.retention', '', true);
  RETURN removed;
END;
$$;

CREATE OR REPLACE FUNCTION toolhub_checkpoint_guard() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'retention checkpoints are append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS toolhub_checkpoint_guard ON registry_auditcheckpoint;
CREATE TRIGGER toolhub_checkpoint_guard
  BEFORE UPDATE OR DELETE ON registry_auditcheckpoint
  FOR EACH ROW EXECUTE FUNCTION toolhub_checkpoint_guard();

-- TRUNCATE fires no row trigger: only the owner may (executions 0007 uses it too).
CREATE OR REPLACE FUNCTION toolhub_truncate_guard() RETURNS trigger AS $$
BEGIN
  IF current_user = (SELECT pg_catalog.pg_get_userbyid(relowner)
                     FROM pg_catalog.pg_class WHERE oid = TG_RELID) THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION '% is append-only: TRUNCATE refused', TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS toolhub_truncate_guard ON registry_auditevent;
CREATE TRIGGER toolhub_truncate_guard BEFORE TRUNCATE ON registry_auditevent
  FOR EACH STATEMENT EXECUTE FUNCTION toolhub_truncate_guard();
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON registry_auditcheckpoint;
CREATE TRIGGER toolhub_truncate_guard BEFORE TRUNCATE ON registry_auditcheckpoint
  FOR EACH STATEMENT EXECUTE FUNCTION toolhub_truncate_guard();
"""

REMOVE = """
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON registry_auditevent;
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON registry_auditcheckpoint;
DROP FUNCTION IF EXISTS toolhub_truncate_guard();
DROP TRIGGER IF EXISTS toolhub_checkpoint_guard ON registry_auditcheckpoint;
DROP FUNCTION IF EXISTS toolhub_checkpoint_guard();
DROP FUNCTION IF EXISTS toolhub_audit_retention(bigint);
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(current_schema())")
        schema = cursor.fetchone()[0]
    schema_editor.execute(GUARD, params=None)
    schema_editor.execute(RETENTION.replace("{schema}", schema), params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REMOVE, params=None)
        schema_editor.execute(GUARD_BEFORE, params=None)


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
            model_name="auditevent",
            name="seal_mac",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
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
        migrations.RunPython(install, remove),
    ]
