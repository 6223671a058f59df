"""On PostgreSQL the execution guard also holds unfinished rows to the state machine.

Migration 0003 made finished executions immutable. An unfinished one could
still be set to any status by a plain UPDATE: a call waiting for approval
marked ``succeeded`` with a made-up output, which the trigger then protected.
Now a status may only move along ``executions.models.STATUS_TRANSITIONS``
(frozen here, as a migration must be).
"""

from django.db import migrations

TERMINAL = "('succeeded', 'failed', 'denied', 'invalid', 'rejected', 'expired', 'cancelled')"

# 0003's function, with ``{transitions}`` where an unfinished row's status change is
# checked (nothing there in 0003).
FUNCTION = f"""
CREATE OR REPLACE FUNCTION toolhub_execution_guard() RETURNS trigger AS $$
DECLARE
  fk_cols text[] := ARRAY['principal_id', 'role_id', 'cached_from_id'];
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF current_setting('toolhub.retention', true) = 'on' THEN
      RETURN OLD;
    END IF;
    IF OLD.status IN {TERMINAL} THEN
      RAISE EXCEPTION 'finished executions are immutable: DELETE refused'
        USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status IN {TERMINAL} THEN
    IF (to_jsonb(NEW) - fk_cols) = (to_jsonb(OLD) - fk_cols)
       AND (NEW.principal_id IS NULL OR NEW.principal_id IS NOT DISTINCT FROM OLD.principal_id)
       AND (NEW.role_id IS NULL OR NEW.role_id IS NOT DISTINCT FROM OLD.role_id)
       AND (NEW.cached_from_id IS NULL OR NEW.cached_from_id IS NOT DISTINCT FROM OLD.cached_from_id) THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'finished executions are immutable: UPDATE refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;{{transitions}}
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""

TRANSITIONS = """
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
       (OLD.status = 'pending_approval'
        AND NEW.status IN ('queued', 'rejected', 'expired', 'cancelled', 'denied'))
       OR (OLD.status = 'queued' AND NEW.status IN ('running', 'cancelled', 'denied', 'failed'))
       OR (OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed'))
     ) THEN
    RAISE EXCEPTION 'an execution''s status may not go from % to %', OLD.status, NEW.status
      USING ERRCODE = 'insufficient_privilege';
  END IF;"""

INSTALL = FUNCTION.replace("{transitions}", TRANSITIONS)
PREVIOUS = FUNCTION.replace("{transitions}", "")


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PREVIOUS, params=None)


class Migration(migrations.Migration):
    dependencies = [("executions", "0005_fewer_indexes")]
    operations = [migrations.RunPython(install, remove)]
