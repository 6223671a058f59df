"""Linked ``mcp`` tools store the remote tool they call (``remote_tool_name``).

A call no longer derives it from the tool's own name (renaming a tool would
make it call another tool of the server, with the server's credentials). Every
linked ``mcp`` tool without the config gets the name the old fallback gave it
today: its own name without the ``<server>__`` prefix (the whole name when it
has no such prefix; the part after the first ``__`` for an inline server
without a name).
"""

from django.db import migrations


def _fallback(tool_name: str, server_name: str) -> str:
    # A copy of registry.services.tools.fallback_remote_tool_name as of this migration.
    if server_name and tool_name.startswith(f"{server_name}__"):
        return tool_name[len(server_name) + 2 :]
    if not server_name and "__" in tool_name:
        return tool_name.split("__", 1)[1]
    return tool_name


def _value(config):
    from registry import crypto

    if not config.is_secret:
        return config.plain_value
    return crypto.decrypt_json(config.encrypted_value) if config.encrypted_value else None


def _server_name(apps, tool, configs) -> str | None:
    MCPServer = apps.get_model("registry", "MCPServer")
    if "server" in configs:
        inline = _value(configs["server"])
        return str(inline.get("name") or "") if isinstance(inline, dict) else ""
    server_id = _value(configs["server_id"]) if "server_id" in configs else None
    server_id = server_id or (tool.tool_metadata or {}).get("mcp_server_id")
    if not server_id:
        return None
    try:
        server = MCPServer.objects.filter(pk=str(server_id).strip()).first()
    except Exception:  # not a UUID: the link names no server
        server = None
    return server.name if server is not None else ""


def store_remote_tool_names(apps, schema_editor):
    Tool = apps.get_model("registry", "Tool")
    ToolConfig = apps.get_model("registry", "ToolConfig")
    for tool in Tool.objects.filter(type="mcp").exclude(configs__config_key="remote_tool_name"):
        configs = {c.config_key: c for c in ToolConfig.objects.filter(tool=tool)}
        server_name = _server_name(apps, tool, configs)
        if server_name is None:
            continue
        ToolConfig.objects.create(
            tool=tool,
            config_key="remote_tool_name",
            is_secret=False,
            plain_value=_fallback(tool.name, server_name),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0013_audit_identity_checkpoint_mac"),
    ]

    operations = [
        migrations.RunPython(store_remote_tool_names, migrations.RunPython.noop),
    ]
