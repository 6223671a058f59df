"""Put back the registry-generation triggers that 0018 dropped on SQLite.

0018 adds columns to ``registry_tool`` and ``registry_mcpserver``; SQLite rebuilds
both tables for it, and a rebuilt table has no triggers. An embedded install
migrated through 0018 ignored governance changes to tools and MCP servers until a
restart. This installs every trigger again (idempotent on both backends); from now
on the registry app does so after every migrate as well (``registry/apps.py``).
"""

from django.db import migrations


def put_back(apps, schema_editor):
    from registry import generation_triggers

    generation_triggers.install(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("registry", "0021_python_tool_function_explicit")]
    operations = [migrations.RunPython(put_back, migrations.RunPython.noop)]
