"""On PostgreSQL, the database itself refuses edits and deletes of finished executions.

A terminal execution (succeeded, failed, denied, invalid, rejected, expired,
cancelled) never changes again. Allowed: clearing principal_id, role_id or
cached_from_id when what they point at is deleted (the denormalized names
stay), and deletes inside a transaction that set ``toolhub.retention = 'on'``.
"""

from django.db import migrations

INSTALL = """
CREATE OR REPLACE FUNCTION toolhub_execution_guard() RETURNS trigger AS $$
DECLARE
  fk_cols text[] := ARRAY['principal_id', 'role_id', 'cached_from_id'];
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF current_setting('toolhub.retention', true) = 'on' THEN
      RETURN OLD;
    END IF;
    IF OLD.status IN ('succeeded', 'failed', 'denied', 'invalid', 'rejected', 'expired', 'cancelled') THEN
      RAISE EXCEPTION 'finished executions are immutable: DELETE refused'
        USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status IN ('succeeded', 'failed', 'denied', 'invalid', 'rejected', 'expired', 'cancelled') THEN
    IF (to_jsonb(NEW) - fk_cols) = (to_jsonb(OLD) - fk_cols)
       AND (NEW.principal_id IS NULL OR NEW.principal_id IS NOT DISTINCT FROM OLD.principal_id)
       AND (NEW.role_id IS NULL OR NEW.role_id IS NOT DISTINCT FROM OLD.role_id)
       AND (NEW.cached_from_id IS NULL OR NEW.cached_from_id IS NOT DISTINCT FROM OLD.cached_from_id) THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'finished executions are immutable: UPDATE refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS toolhub_execution_guard ON executions_execution;
CREATE TRIGGER toolhub_execution_guard
  BEFORE UPDATE OR DELETE ON executions_execution
  FOR EACH ROW EXECUTE FUNCTION toolhub_execution_guard();
"""

REMOVE = """
DROP TRIGGER IF EXISTS toolhub_execution_guard ON executions_execution;
DROP FUNCTION IF EXISTS toolhub_execution_guard();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(REMOVE)


class Migration(migrations.Migration):
    dependencies = [("executions", "0002_approvals_cache")]
    operations = [migrations.RunPython(install, remove)]
