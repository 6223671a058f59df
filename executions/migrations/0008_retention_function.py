"""On PostgreSQL, finished executions leave only through the retention function.

The execution guard let any session delete finished executions by setting
``toolhub.retention``. Now only the tables' owner may, which in practice is
``toolhub_execution_retention(ids)``, a ``SECURITY DEFINER`` function the owner
installs here: it deletes finished executions among ``ids`` created before the
latest retention checkpoint's cut, nothing else. Only the owner may TRUNCATE
the table (registry 0013's guard). See docs/security-audit-chain.md.
"""

import importlib

from django.db import migrations

# The guard as 0007 left it (0006's, letting agent_owner_id go to null on finished rows).
GUARD = importlib.import_module("executions.migrations.0007_execution_agent_owner")
ANY_SESSION = "    IF current_setting('toolhub.retention', true) = 'on' THEN\n"
OWNER_ONLY = (
    "    IF current_setting('toolhub.retention', true) = 'on'\n"
    "       AND current_user = (SELECT pg_catalog.pg_get_userbyid(relowner)\n"
    "                           FROM pg_catalog.pg_class WHERE oid = TG_RELID) THEN\n"
)
assert ANY_SESSION in GUARD.INSTALL

RETENTION = """
CREATE OR REPLACE FUNCTION toolhub_execution_retention(ids uuid[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $$
DECLARE
  horizon timestamptz;
  removed bigint;
BEGIN
  SELECT removed_before INTO horizon FROM registry_auditcheckpoint
    ORDER BY sequence DESC LIMIT 1;
  IF horizon IS NULL THEN
    RAISE EXCEPTION 'execution retention: no retention checkpoint'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM pg_catalog.set_config('toolhub.retention', 'on', true);
  DELETE FROM executions_execution
    WHERE id = ANY(ids) AND status IN {terminal} AND created_at < horizon;
  GET DIAGNOSTICS removed = ROW_COUNT;
  PERFORM pg_catalog.set_config('toolhub.retention', '', true);
  RETURN removed;
END;
$$;

DROP TRIGGER IF EXISTS toolhub_truncate_guard ON executions_execution;
CREATE TRIGGER toolhub_truncate_guard BEFORE TRUNCATE ON executions_execution
  FOR EACH STATEMENT EXECUTE FUNCTION toolhub_truncate_guard();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(current_schema())")
        schema = cursor.fetchone()[0]
    schema_editor.execute(GUARD.INSTALL.replace(ANY_SESSION, OWNER_ONLY), params=None)
    function = RETENTION.replace("{schema}", schema).replace("{terminal}", GUARD.TERMINAL)
    schema_editor.execute(function, params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "DROP TRIGGER IF EXISTS toolhub_truncate_guard ON executions_execution;"
            "DROP FUNCTION IF EXISTS toolhub_execution_retention(uuid[])",
            params=None,
        )
        schema_editor.execute(GUARD.INSTALL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0007_execution_agent_owner"),
        ("registry", "0013_audit_identity_checkpoint_mac"),
    ]
    operations = [migrations.RunPython(install, remove)]
