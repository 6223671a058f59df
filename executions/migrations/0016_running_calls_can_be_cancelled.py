"""A running call may be cancelled: ``running → cancelled`` joins the state machine.

The worker that runs it stops the work (``executions.services.cancellation``); the row
is moved by whoever cancelled it, so the record names them. The guard function as 0008
left it (0007's, with deletes by the tables' owner only), with that one transition
added: built from those migrations' frozen text, as a migration must be.
"""

import importlib

from django.db import migrations

_retention = importlib.import_module("executions.migrations.0008_retention_function")
BEFORE = _retention.GUARD.INSTALL.replace(_retention.ANY_SESSION, _retention.OWNER_ONLY)
RUNNING_BEFORE = "(OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed'))"
RUNNING_NOW = "(OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed', 'cancelled'))"
assert RUNNING_BEFORE in BEFORE and _retention.OWNER_ONLY in BEFORE
INSTALL = BEFORE.replace(RUNNING_BEFORE, RUNNING_NOW)


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BEFORE, params=None)


class Migration(migrations.Migration):
    dependencies = [("executions", "0015_execution_upstream_connection")]
    operations = [migrations.RunPython(install, remove)]
