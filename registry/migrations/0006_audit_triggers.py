"""On PostgreSQL, the database itself refuses edits and deletes of audit events.

Allowed: the sealer filling in sequence/prev_hash/hash/sealed_at of an
unsealed event, clearing actor_id when a user is deleted (the denormalized
actor_name stays and is what the hash covers), and deletes inside a
transaction that set ``toolhub.retention = 'on'`` (the retention command,
which exports and checkpoints first).
"""

from django.db import migrations

INSTALL = """
CREATE OR REPLACE FUNCTION toolhub_audit_guard() RETURNS trigger AS $$
DECLARE
  seal_cols text[] := ARRAY['sequence', 'prev_hash', 'hash', 'sealed_at', 'actor_id'];
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF current_setting('toolhub.retention', true) = 'on' THEN
      RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: DELETE refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF (to_jsonb(NEW) - seal_cols) = (to_jsonb(OLD) - seal_cols)
     AND (NEW.actor_id IS NULL OR NEW.actor_id IS NOT DISTINCT FROM OLD.actor_id)
     AND (
       OLD.sequence IS NULL
       OR (NEW.sequence IS NOT DISTINCT FROM OLD.sequence
           AND NEW.prev_hash IS NOT DISTINCT FROM OLD.prev_hash
           AND NEW.hash IS NOT DISTINCT FROM OLD.hash
           AND NEW.sealed_at IS NOT DISTINCT FROM OLD.sealed_at)
     ) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit events are append-only: UPDATE refused'
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS toolhub_audit_guard ON registry_auditevent;
CREATE TRIGGER toolhub_audit_guard
  BEFORE UPDATE OR DELETE ON registry_auditevent
  FOR EACH ROW EXECUTE FUNCTION toolhub_audit_guard();
"""

REMOVE = """
DROP TRIGGER IF EXISTS toolhub_audit_guard ON registry_auditevent;
DROP FUNCTION IF EXISTS toolhub_audit_guard();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REMOVE)


class Migration(migrations.Migration):
    dependencies = [("registry", "0005_audit_chain")]
    operations = [migrations.RunPython(install, remove)]
