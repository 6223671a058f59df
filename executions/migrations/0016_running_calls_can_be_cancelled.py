"""A running call may be cancelled: ``running → cancelled`` joins the state machine.

The worker that runs it stops the work (``executions.services.cancellation``); the row
is moved by whoever cancelled it, so the record names them. 0007's guard function,
with that one transition added (frozen here from 0007's text, as a migration must be).
"""

import importlib

from django.db import migrations

_previous = importlib.import_module("executions.migrations.0007_execution_agent_owner")
RUNNING_BEFORE = "(OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed'))"
RUNNING_NOW = "(OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed', 'cancelled'))"
assert RUNNING_BEFORE in _previous.INSTALL
INSTALL = _previous.INSTALL.replace(RUNNING_BEFORE, RUNNING_NOW)


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_previous.INSTALL, params=None)


class Migration(migrations.Migration):
    dependencies = [("executions", "0015_execution_upstream_connection")]
    operations = [migrations.RunPython(install, remove)]
