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


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0009_mcp_token_env_var_help"),
    ]

    operations = [
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
    ]
