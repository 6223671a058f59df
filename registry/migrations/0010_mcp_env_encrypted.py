"""MCP servers' stdio environment: values move from a plain JSON field to one encrypted object."""

from django.db import migrations, models


def encrypt_env(apps, schema_editor):
    from registry import crypto

    MCPServer = apps.get_model("registry", "MCPServer")
    for server in MCPServer.objects.exclude(env={}).only("pk", "env"):
        if server.env:
            MCPServer.objects.filter(pk=server.pk).update(
                encrypted_env=crypto.encrypt_json(dict(server.env))
            )


def decrypt_env(apps, schema_editor):
    from registry import crypto

    MCPServer = apps.get_model("registry", "MCPServer")
    for server in MCPServer.objects.exclude(encrypted_env="").only("pk", "encrypted_env"):
        MCPServer.objects.filter(pk=server.pk).update(env=crypto.decrypt_json(server.encrypted_env))


# The registry generation's trigger on MCP servers names the columns whose UPDATE
# bumps it (0007); dropping ``env`` drops that trigger (PostgreSQL cascades, SQLite
# rebuilds the table), so it is installed again with ``encrypted_env``.
_COLUMNS = [
    "name",
    "transport",
    "url",
    "command",
    "args",
    "encrypted_env",
    "encrypted_auth_token",
    "token_env_var",
    "tools_allowed",
    "tools_denied",
    "timeout_seconds",
    "max_concurrency",
    "is_enabled",
]
_TABLE = "registry_mcpserver"


def _install_trigger(schema_editor, columns):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {_TABLE};\n"
            f"CREATE TRIGGER toolhub_registry_changed AFTER INSERT OR DELETE OR TRUNCATE "
            f"OR UPDATE OF {', '.join(columns)} ON {_TABLE} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION toolhub_registry_changed();"
        )
    elif vendor == "sqlite":
        bump = "UPDATE toolhub_registry_generation SET value = random() WHERE id = 1;"
        for n, kind in enumerate(["INSERT", "DELETE", f"UPDATE OF {', '.join(columns)}"]):
            name = f"toolhub_registry_changed_{_TABLE}_{n}"
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
            schema_editor.execute(
                f"CREATE TRIGGER {name} AFTER {kind} ON {_TABLE} BEGIN {bump} END"
            )


def install_trigger(apps, schema_editor):
    _install_trigger(schema_editor, _COLUMNS)


def install_previous_trigger(apps, schema_editor):
    columns = ["env" if c == "encrypted_env" else c for c in _COLUMNS]
    _install_trigger(schema_editor, columns)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0009_mcp_token_env_var_help"),
    ]

    operations = [
        # Undone last: the column is back by then.
        migrations.RunPython(migrations.RunPython.noop, install_previous_trigger),
        migrations.AddField(
            model_name="mcpserver",
            name="encrypted_env",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_env, decrypt_env),
        migrations.RemoveField(
            model_name="mcpserver",
            name="env",
        ),
        migrations.RunPython(install_trigger, migrations.RunPython.noop),
    ]
