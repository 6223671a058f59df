"""Catalog files: ``tools:`` / ``mcp_servers:`` lists (tools.yml, mcp.yml) and single-tool documents.

A tool entry (in ``tools:``, or a ``type: tool`` document) may carry:

=====================  ===============================================================
``name``               required, ``[a-zA-Z0-9_-]{1,64}``
``type``               tool type (``http``/``database``/``mcp``/``python``, any letter
                       case); in a single-tool document the type is ``tool_type``
                       (``type`` is ``tool``)
``description``,       text
``version``
``category``,          ``tool_metadata`` keys (``null`` removes one); ``metadata``: other
``speed``, ``safety``  ``tool_metadata`` keys, merged key by key
``module``,            a Python tool's module and registered function, stored as configs
``function``           (nothing is ever imported from them)
``mcp_server``,        an MCP tool's server (by name) and its name on that server
``remote_tool_name``
``parameters_schema``  the input JSON Schema (an object; ``input_schema`` is the same)
``output_schema``      the output JSON Schema
``configs``            plain configs ``{key: value}``
``secret_configs``     names of secret configs (values are never exported), or
                       ``{key: value}`` to set secrets (stored encrypted)
``is_active``,         the tool's fields (every field the tool services accept); a
``timeout_seconds``,   single-tool document may say ``disable_parallel: true`` for
``max_retries``, …     ``max_concurrency: 1``
=====================  ===============================================================

An MCP server entry: ``name``, ``description``, ``transport`` (default
``streamable_http`` with a ``url``, ``stdio`` with a ``command``), ``url``,
``command``, ``args``, ``env``, ``auth: {type: bearer, token_env_var: VAR}``
(or ``token: …``, stored encrypted; ``type: none`` clears), ``provides_tools``
(= ``tools_allowed``), ``tools_denied``, ``timeout_seconds``,
``max_concurrency``, ``is_enabled``.

Keys left out leave the stored value alone; unknown keys are reported.
"""

from __future__ import annotations

import re
from typing import Any

from registry.importers.schema_rows import SchemaProblem, schema_to_rows
from registry.importers.source import Document, Problem
from registry.importers.specs import (
    CONFIG_KEY_RE,
    MISSING,
    TOOL_NAME_RE,
    Entry,
    ServerSpec,
    ToolSpec,
)
from registry.models.mcp import MCP_SERVER_NAME_PATTERN, MCPTransport
from registry.models.tools import ToolType
from registry.services import tools as tool_services
from registry.services.catalog import KEEP_SECRET
from toolhub.api.serializers import any_case_choice

COMMON_TOOL_KEYS = {
    "name",
    "description",
    "version",
    "category",
    "speed",
    "safety",
    "metadata",
    "is_active",
    "timeout_seconds",
    "max_retries",
    "cache_ttl_seconds",
    "max_concurrency",
    "max_response_bytes",
    "requires_approval",
    "module",
    "function",
    "mcp_server",
    "remote_tool_name",
    "parameters_schema",
    "input_schema",
    "output_schema",
    "configs",
    "secret_configs",
}
CATALOG_TOOL_KEYS = COMMON_TOOL_KEYS | {"type"}
SINGLE_TOOL_KEYS = COMMON_TOOL_KEYS | {"type", "tool_type", "disable_parallel"}


def extra_tool_fields() -> list[str]:
    """Tool fields without a check of their own here: passed on, the services validate them."""
    return [
        f
        for f in tool_services.TOOL_FIELDS
        if f not in COMMON_TOOL_KEYS | {"type", "tool_metadata"}
    ]


SERVER_KEYS = {
    "name",
    "description",
    "transport",
    "url",
    "command",
    "args",
    "env",
    "auth",
    "provides_tools",
    "tools_allowed",
    "tools_denied",
    "timeout_seconds",
    "max_concurrency",
    "is_enabled",
}
AUTH_KEYS = {"type", "token_env_var", "token"}
METADATA_KEYS = ("category", "speed", "safety")
TRANSPORT_ALIASES = {
    "streamable_http": MCPTransport.STREAMABLE_HTTP,
    "streamable-http": MCPTransport.STREAMABLE_HTTP,
    "http": MCPTransport.STREAMABLE_HTTP,
    "sse": MCPTransport.SSE,
    "stdio": MCPTransport.STDIO,
}


class Parsed:
    """Specs read from documents, with the problems met on the way."""

    def __init__(self) -> None:
        self.servers: list[ServerSpec] = []
        self.tools: list[ToolSpec] = []
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.unknown: list[Problem] = []
        # OpenAPI: operations ("GET /path") present but left out by a selection.
        self.unselected: set[str] = set()


# --------------------------------------------------------------------------- tools


def _schema_rows(entry: Entry, key: str, parsed: Parsed, parameter_type: str) -> Any:
    schema = entry.mapping(key)
    if schema is MISSING:
        return MISSING
    warnings: list[str] = []
    try:
        rows = schema_to_rows(schema, parameter_type=parameter_type, warnings=warnings)
    except SchemaProblem as exc:
        entry.error(f"{key}{exc.path}", exc.message)
        return MISSING
    for message in warnings:
        parsed.warnings.append(entry.doc.problem(entry.key_path(key), message, "schema"))
    return rows


def parse_tool(entry: Entry, parsed: Parsed, *, single: bool) -> ToolSpec | None:
    errors_before = len(parsed.errors)
    extras = extra_tool_fields()
    entry.report_unknown((SINGLE_TOOL_KEYS if single else CATALOG_TOOL_KEYS) | set(extras))
    name = entry.string("name", required=True)
    if name is not MISSING and not TOOL_NAME_RE.match(name):
        entry.error("name", "use 1 to 64 characters: letters, digits, '_' or '-'")
    type_key = "tool_type" if single else "type"
    tool_type = any_case_choice(entry.string(type_key), ToolType.values)  # "HTTP" too
    if tool_type is not MISSING and tool_type not in ToolType.values:
        entry.error(type_key, f"must be one of {', '.join(ToolType.values)}")
    fields: dict[str, Any] = {}
    for key in ("description",):
        value = entry.string(key)
        if value is not MISSING:
            fields[key] = value
    value = entry.string("version", max_length=32)
    if value is not MISSING:
        fields["version"] = value
    for key in ("is_active", "requires_approval"):
        value = entry.boolean(key)
        if value is not MISSING:
            fields[key] = value
    for key, low, high in (
        ("timeout_seconds", 1, 3600),
        ("max_retries", 0, 10),
        ("cache_ttl_seconds", 0, None),
        ("max_response_bytes", 1024, None),
    ):
        value = entry.integer(key, minimum=low, maximum=high)
        if value is not MISSING:
            fields[key] = value
    value = entry.integer("max_concurrency", minimum=1, nullable=True)
    if value is not MISSING:
        fields["max_concurrency"] = value
    for key in extras:
        if entry.has(key):
            fields[key] = entry.any(key)
    if single:
        disable = entry.boolean("disable_parallel")
        if disable is True:
            if fields.get("max_concurrency", 1) != 1:
                entry.error("disable_parallel", "contradicts max_concurrency (true means 1)")
            fields["max_concurrency"] = 1
        elif disable is False and "max_concurrency" not in fields:
            fields["_allow_parallel"] = True

    metadata: dict[str, Any] = {}
    extra = entry.mapping("metadata")
    if extra is not MISSING:
        metadata.update(extra)
    for key in METADATA_KEYS:
        value = entry.string(key, nullable=True)
        if value is not MISSING:
            metadata[key] = value

    configs: dict[str, Any] = {}
    raw_configs = entry.mapping("configs")
    if raw_configs is not MISSING:
        for key, value in raw_configs.items():
            if not CONFIG_KEY_RE.match(key):
                entry.error(f"configs/{key}", "config keys use letters, digits, '_', '.' or '-'")
            configs[key] = value
    secrets: dict[str, Any] = {}
    raw_secrets = entry.any("secret_configs")
    if isinstance(raw_secrets, list):
        for index, key in enumerate(raw_secrets):
            if not isinstance(key, str) or not CONFIG_KEY_RE.match(key):
                entry.error(f"secret_configs/{index}", "must be a config key")
            else:
                secrets[key] = KEEP_SECRET
    elif isinstance(raw_secrets, dict):
        for key, value in raw_secrets.items():
            if not CONFIG_KEY_RE.match(key):
                entry.error(f"secret_configs/{key}", "must be a config key")
            secrets[key] = KEEP_SECRET if value is None else value
    elif raw_secrets is not MISSING:
        entry.error("secret_configs", "must be a list of config keys or a mapping key: value")
    for key in sorted(set(configs) & set(secrets)):
        entry.error(f"secret_configs/{key}", "is also listed under configs")

    for key in ("module", "function"):
        value = entry.string(key)
        if value is MISSING:
            continue
        if key in configs:
            entry.error(key, f"'{key}' is given twice (also under configs)")
        configs[key] = value
    mcp_server = entry.string("mcp_server")
    remote = entry.string("remote_tool_name")
    if mcp_server is not MISSING and tool_type not in (MISSING, ToolType.MCP):
        entry.error("mcp_server", f"only tools of type 'mcp' have a server (type is {tool_type})")

    if entry.has("parameters_schema") and entry.has("input_schema"):
        entry.error("input_schema", "give parameters_schema or input_schema, not both")
    schema_key = "input_schema" if entry.has("input_schema") else "parameters_schema"
    parameters = _schema_rows(entry, schema_key, parsed, "input")
    outputs = _schema_rows(entry, "output_schema", parsed, "output")

    if len(parsed.errors) > errors_before or name is MISSING:
        return None
    if mcp_server is not MISSING:
        default_type = ToolType.MCP
    elif "module" in configs or "function" in configs:
        default_type = ToolType.PYTHON
    elif "base_url" in configs or "endpoint" in configs:
        default_type = ToolType.HTTP
    else:
        default_type = ToolType.PYTHON
    return ToolSpec(
        path=entry.path,
        document=entry.doc,
        name=name,
        type=None if tool_type is MISSING else tool_type,
        default_type=default_type,
        fields=fields,
        metadata=metadata or None,
        parameters=None if parameters is MISSING else parameters,
        output_parameters=None if outputs is MISSING else outputs,
        configs=configs or None,
        secret_configs=secrets or None,
        mcp_server=None if mcp_server is MISSING else mcp_server,
        remote_tool_name=None if remote is MISSING else remote,
    )


# --------------------------------------------------------------------------- MCP servers


def parse_server(entry: Entry, parsed: Parsed) -> ServerSpec | None:
    errors_before = len(parsed.errors)
    entry.report_unknown(SERVER_KEYS)
    name = entry.string("name", required=True)
    if name is not MISSING and not re.match(MCP_SERVER_NAME_PATTERN, name):
        entry.error("name", "use 1 to 40 characters: letters, digits, '_' or '-'")
    fields: dict[str, Any] = {}
    for key in ("description", "url", "command"):
        value = entry.string(key)
        if value is not MISSING:
            fields[key] = value
    transport = entry.string("transport")
    if transport is not MISSING:
        if transport.lower() not in TRANSPORT_ALIASES:
            entry.error("transport", "must be streamable_http, sse or stdio")
        else:
            fields["transport"] = str(TRANSPORT_ALIASES[transport.lower()])
    elif "command" in fields and "url" not in fields:
        fields["transport"] = str(MCPTransport.STDIO)
    elif "url" in fields:
        fields["transport"] = str(MCPTransport.STREAMABLE_HTTP)
    args = entry.string_list("args")
    if args is not MISSING:
        fields["args"] = args
    env = entry.mapping("env")
    if env is not MISSING:
        for key, value in env.items():
            if not isinstance(value, str):
                entry.error(f"env/{key}", "environment values must be strings (quote them)")
        fields["env"] = env
    if entry.has("provides_tools") and entry.has("tools_allowed"):
        entry.error("tools_allowed", "give provides_tools or tools_allowed, not both")
    for key, target in (
        ("provides_tools", "tools_allowed"),
        ("tools_allowed", "tools_allowed"),
        ("tools_denied", "tools_denied"),
    ):
        value = entry.string_list(key)
        if value is not MISSING:
            fields[target] = value
    value = entry.integer("timeout_seconds", minimum=1, maximum=3600)
    if value is not MISSING:
        fields["timeout_seconds"] = value
    value = entry.integer("max_concurrency", minimum=1, nullable=True)
    if value is not MISSING:
        fields["max_concurrency"] = value
    value = entry.boolean("is_enabled")
    if value is not MISSING:
        fields["is_enabled"] = value

    token: Any = MISSING
    needs_token = False
    auth = entry.mapping("auth")
    if auth is not MISSING:
        sub = Entry(entry.doc, entry.key_path("auth"), auth, parsed.errors, parsed.unknown)
        sub.report_unknown(AUTH_KEYS)
        kind = sub.string("type")
        kind = "bearer" if kind is MISSING else kind
        env_var = sub.string("token_env_var")
        secret = sub.string("token")
        if kind == "none":
            fields["token_env_var"] = ""
            token = None
        elif kind != "bearer":
            sub.error("type", "must be 'bearer' or 'none'")
        elif env_var is not MISSING and secret is not MISSING:
            sub.error("token", "give token_env_var or token, not both")
        elif env_var is not MISSING:
            fields["token_env_var"] = env_var
            token = None
        elif secret is not MISSING:
            fields["token_env_var"] = ""
            token = secret
        else:
            needs_token = True
    if len(parsed.errors) > errors_before or name is MISSING:
        return None
    return ServerSpec(
        path=entry.path,
        document=entry.doc,
        name=name,
        fields=fields,
        auth_token=token,
        needs_token=needs_token,
    )


# --------------------------------------------------------------------------- documents


def parse_catalog(doc: Document, parsed: Parsed) -> None:
    """A mapping with ``tools:`` and/or ``mcp_servers:`` lists."""
    top = Entry(doc, "", doc.data, parsed.errors, parsed.unknown)
    top.report_unknown({"tools", "mcp_servers", "version"})
    for key in ("mcp_servers", "tools"):
        items = top.any(key)
        if items is MISSING or items is None:
            continue
        if not isinstance(items, list):
            top.error(key, "must be a list of entries (each starting with '- ')")
            continue
        for index, item in enumerate(items):
            entry = Entry(doc, f"/{key}/{index}", item, parsed.errors, parsed.unknown)
            if key == "tools":
                spec = parse_tool(entry, parsed, single=False)
                if spec:
                    parsed.tools.append(spec)
            else:
                server = parse_server(entry, parsed)
                if server:
                    parsed.servers.append(server)


def parse_single(doc: Document, parsed: Parsed) -> None:
    entry = Entry(doc, "", doc.data, parsed.errors, parsed.unknown)
    spec = parse_tool(entry, parsed, single=True)
    if spec:
        parsed.tools.append(spec)


def check_repeats(parsed: Parsed) -> None:
    """A name defined twice in one import is an error (which one should win?)."""
    for items, label in ((parsed.tools, "tool"), (parsed.servers, "MCP server")):
        seen: dict[str, str] = {}
        for spec in items:
            if spec.name in seen:
                parsed.errors.append(
                    spec.document.problem(
                        f"{spec.path}/name",
                        f"{label} '{spec.name}' is already defined at {seen[spec.name]}",
                        "duplicate",
                    )
                )
            else:
                line = spec.document.line(spec.path)
                where = spec.document.base + spec.path or "/"
                seen[spec.name] = f"line {line} ({where})" if line else where
