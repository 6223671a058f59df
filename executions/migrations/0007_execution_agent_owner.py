"""Executions record who owned the calling agent when the call was made.

Four eyes holds against that person too, not only the agent's owner now: an
admin reassigning the agent must not let the owner at the time approve the call.
Like principal_id and role_id, agent_owner_id may be cleared on a finished row
when its user is deleted, so the execution guard (0003, 0006) lets it go to
null. Unfinished rows get the agent's owner now: the best knowledge there is.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TERMINAL = "('succeeded', 'failed', 'denied', 'invalid', 'rejected', 'expired', 'cancelled')"

# 0006's function with ``{fk}`` for the foreign keys that may be cleared on a finished row.
FUNCTION = f"""
CREATE OR REPLACE FUNCTION toolhub_execution_guard() RETURNS trigger AS $$
DECLARE
  fk_cols text[] := ARRAY[{{fk}}];
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
       AND (NEW.cached_from_id IS NULL OR NEW.cached_from_id IS NOT DISTINCT FROM OLD.cached_from_id){{owner}} THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'finished executions are immutable: UPDATE refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
       (OLD.status = 'pending_approval'
        AND NEW.status IN ('queued', 'rejected', 'expired', 'cancelled', 'denied'))
       OR (OLD.status = 'queued' AND NEW.status IN ('running', 'cancelled', 'denied', 'failed'))
       OR (OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed'))
     ) THEN
    RAISE EXCEPTION 'an execution''s status may not go from % to %', OLD.status, NEW.status
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""

INSTALL = FUNCTION.replace(
    "{fk}", "'principal_id', 'role_id', 'cached_from_id', 'agent_owner_id'"
).replace(
    "{owner}",
    "\n       AND (NEW.agent_owner_id IS NULL"
    " OR NEW.agent_owner_id IS NOT DISTINCT FROM OLD.agent_owner_id)",
)
PREVIOUS = FUNCTION.replace("{fk}", "'principal_id', 'role_id', 'cached_from_id'").replace(
    "{owner}", ""
)

BACKFILL = """
UPDATE executions_execution SET agent_owner_id = (
  SELECT owner_id FROM registry_agent WHERE registry_agent.id = executions_execution.agent_id
)
WHERE agent_id IS NOT NULL AND agent_owner_id IS NULL AND status IN ('pending_approval', 'queued', 'running')
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PREVIOUS, params=None)


def backfill(apps, schema_editor):
    schema_editor.execute(BACKFILL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0006_status_transitions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="execution",
            name="agent_owner",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                help_text=(
                    "Who owned the agent when it made the call (four eyes: they may not "
                    "approve it)."
                ),
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(install, remove),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
