"""Writing the catalog back as YAML that ``import_tools`` reads (a round trip changes nothing).

Secrets are never exported: a secret config appears only by name under
``secret_configs`` (importing that keeps the stored value, or warns when there
is none), an MCP server's stored token only as ``auth: {type: bearer}`` and its
environment's values as the mask.
Links that are ids in the database are written as names: an MCP tool names its
``mcp_server`` and ``remote_tool_name`` (the ``server_id`` config and the
``mcp_server_id`` metadata are derived again on import).
"""

from __future__ import annotations

from typing import Any

import yaml

from registry.models import MCPServer, Tool
from registry.models.mcp import MCPTransport
from registry.models.tools import ParameterKind, ToolType
from registry.schema_rows import rows_to_schema
from registry.services.mcp import (
    META_LISTED_NAME,
    META_REMOTE_NAME,
    META_SERVER,
    META_SERVER_ID,
)
from registry.services.tools import TOOL_FIELDS

FORMATS = ("tools", "single")
# The tool's managed fields an entry holds as they are; these four are written apart
# (the entry's name and type first, the description as a block, metadata split up).
_WRITTEN_APART = ("name", "type", "description", "tool_metadata")
_FIELDS = tuple(field for field in TOOL_FIELDS if field not in _WRITTEN_APART)
_METADATA_KEYS = ("category", "speed", "safety")
_MCP_META = {META_SERVER, META_SERVER_ID, META_REMOTE_NAME, META_LISTED_NAME}


class _Dumper(yaml.SafeDumper):
    """Block style; multi-line strings as ``|`` blocks so descriptions stay readable."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def server_entry(server: MCPServer) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": server.name}
    if server.description:
        entry["description"] = server.description
    entry["transport"] = server.transport
    if server.transport == MCPTransport.STDIO:
        entry["command"] = server.command
        if server.args:
            entry["args"] = list(server.args)
        if server.encrypted_env:
            # Values are secrets: the mask keeps a stored value on import, or is reported.
            entry["env"] = server.masked_env()
    else:
        entry["url"] = server.url
    if server.token_env_var:
        entry["auth"] = {"type": "bearer", "token_env_var": server.token_env_var}
    elif server.has_auth_token:
        entry["auth"] = {"type": "bearer"}  # the token itself is never exported
    if server.tools_allowed:
        entry["provides_tools"] = list(server.tools_allowed)
    if server.tools_denied:
        entry["tools_denied"] = list(server.tools_denied)
    entry["timeout_seconds"] = server.timeout_seconds
    entry["max_concurrency"] = server.max_concurrency
    entry["is_enabled"] = server.is_enabled
    if server.tool_prefix is not None:
        entry["tool_prefix"] = server.tool_prefix
    return entry


def _mcp_link_entry(entry: dict[str, Any], metadata: dict, configs: dict) -> tuple[dict, dict]:
    """A linked MCP tool's server and remote name as entry keys; the metadata and configs
    that said them are left out of what remains."""
    entry["mcp_server"] = metadata[META_SERVER]
    remote = configs.get("remote_tool_name")
    entry["remote_tool_name"] = (
        remote.plain_value if remote and not remote.is_secret else metadata.get(META_REMOTE_NAME)
    )
    metadata = {k: v for k, v in metadata.items() if k not in _MCP_META}
    configs = {k: c for k, c in configs.items() if k not in ("server_id", "remote_tool_name")}
    return metadata, configs


def _python_target_entry(entry: dict[str, Any], configs: dict) -> None:
    """A Python tool's plain ``module`` and ``function`` configs as entry keys."""
    for key in ("module", "function"):
        config = configs.get(key)
        if config is not None and not config.is_secret:
            entry[key] = config.plain_value
            del configs[key]


def tool_entry(
    tool: Tool, *, single: bool = False, server_ids: set[str] | None = None
) -> dict[str, Any]:
    """One tool as an import entry. ``server_ids``: the MCP servers that exist (by id)."""
    entry: dict[str, Any] = {"type": "tool"} if single else {}
    entry["name"] = tool.name
    entry["tool_type" if single else "type"] = tool.type
    entry["description"] = tool.description
    metadata = dict(tool.tool_metadata or {})
    for key in _METADATA_KEYS:
        if key in metadata:
            entry[key] = metadata.pop(key)
    configs = {c.config_key: c for c in tool.configs.all()}
    linked = server_ids is None or str(metadata.get(META_SERVER_ID)) in server_ids
    if tool.type == ToolType.MCP and metadata.get(META_SERVER) and linked:
        metadata, configs = _mcp_link_entry(entry, metadata, configs)
    if tool.type == ToolType.PYTHON:
        _python_target_entry(entry, configs)
    if metadata:
        entry["metadata"] = metadata
    for field in _FIELDS:
        entry[field] = getattr(tool, field)
    if single:
        concurrency = entry.pop("max_concurrency")
        if concurrency == 1:
            entry["disable_parallel"] = True
        else:
            entry["max_concurrency"] = concurrency
    params = list(tool.parameters.all())
    inputs = [p for p in params if p.parameter_type == ParameterKind.INPUT]
    outputs = [p for p in params if p.parameter_type == ParameterKind.OUTPUT]
    entry["input_schema" if single else "parameters_schema"] = rows_to_schema(inputs)
    if outputs:
        entry["output_schema"] = rows_to_schema(outputs)
    plain = {k: c.plain_value for k, c in sorted(configs.items()) if not c.is_secret}
    secret = sorted(k for k, c in configs.items() if c.is_secret)
    if plain:
        entry["configs"] = plain
    if secret:
        entry["secret_configs"] = secret
    return entry


def export_catalog(fmt: str = "tools", *, tools=None) -> str:
    """The catalog as YAML: one catalog file (``tools``) or single-tool documents (``single``).

    The single-tool format has no place for MCP servers: their tools name the
    server, which must exist when the file is imported.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    tools = tools if tools is not None else Tool.objects.all()
    tools = tools.order_by("name").prefetch_related("parameters", "configs")
    server_ids = {str(pk) for pk in MCPServer.objects.values_list("pk", flat=True)}
    if fmt == "single":
        documents = [tool_entry(t, single=True, server_ids=server_ids) for t in tools]
        return yaml.dump_all(
            documents, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )
    data: dict[str, Any] = {}
    servers = [server_entry(s) for s in MCPServer.objects.order_by("name")]
    if servers:
        data["mcp_servers"] = servers
    data["tools"] = [tool_entry(t, server_ids=server_ids) for t in tools]
    return _dump(data)
