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


def _tool_name_and_type(entry: Entry, *, single: bool) -> tuple[Any, Any]:
    name = entry.string("name", required=True)
    if name is not MISSING and not TOOL_NAME_RE.match(name):
        entry.error("name", "use 1 to 64 characters: letters, digits, '_' or '-'")
    type_key = "tool_type" if single else "type"
    tool_type = any_case_choice(entry.string(type_key), ToolType.values)  # "HTTP" too
    if tool_type is not MISSING and tool_type not in ToolType.values:
        entry.error(type_key, f"must be one of {', '.join(ToolType.values)}")
    return name, tool_type


def _set_given(fields: dict[str, Any], key: str, value: Any) -> None:
    if value is not MISSING:
        fields[key] = value


def _tool_fields(entry: Entry, extras: list[str]) -> dict[str, Any]:
    """The tool's own fields the entry gives, each checked as the tool services would."""
    fields: dict[str, Any] = {}
    _set_given(fields, "description", entry.string("description"))
    _set_given(fields, "version", entry.string("version", max_length=32))
    for key in ("is_active", "requires_approval"):
        _set_given(fields, key, entry.boolean(key))
    for key, low, high in (
        ("timeout_seconds", 1, 3600),
        ("max_retries", 0, 10),
        ("cache_ttl_seconds", 0, None),
        ("max_response_bytes", 1024, None),
    ):
        _set_given(fields, key, entry.integer(key, minimum=low, maximum=high))
    _set_given(
        fields, "max_concurrency", entry.integer("max_concurrency", minimum=1, nullable=True)
    )
    for key in extras:
        if entry.has(key):
            fields[key] = entry.any(key)
    return fields


def _apply_disable_parallel(entry: Entry, fields: dict[str, Any]) -> None:
    """A single-tool document's ``disable_parallel``: true is ``max_concurrency: 1``."""
    disable = entry.boolean("disable_parallel")
    if disable is True:
        if fields.get("max_concurrency", 1) != 1:
            entry.error("disable_parallel", "contradicts max_concurrency (true means 1)")
        fields["max_concurrency"] = 1
    elif disable is False and "max_concurrency" not in fields:
        fields["_allow_parallel"] = True


def _tool_metadata(entry: Entry) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    extra = entry.mapping("metadata")
    if extra is not MISSING:
        metadata.update(extra)
    for key in METADATA_KEYS:
        _set_given(metadata, key, entry.string(key, nullable=True))
    return metadata


def _plain_configs(entry: Entry) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    raw_configs = entry.mapping("configs")
    if raw_configs is not MISSING:
        for key, value in raw_configs.items():
            if not CONFIG_KEY_RE.match(key):
                entry.error(f"configs/{key}", "config keys use letters, digits, '_', '.' or '-'")
            configs[key] = value
    return configs


def _secret_configs(entry: Entry) -> dict[str, Any]:
    """Secret configs: a list of names (keep what is stored) or ``{key: value}``."""
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
    return secrets


def _add_python_target(entry: Entry, configs: dict[str, Any]) -> None:
    """A Python tool's ``module`` and ``function``, stored as configs."""
    for key in ("module", "function"):
        value = entry.string(key)
        if value is MISSING:
            continue
        if key in configs:
            entry.error(key, f"'{key}' is given twice (also under configs)")
        configs[key] = value


def _tool_parameters(entry: Entry, parsed: Parsed) -> tuple[Any, Any]:
    """The input and output parameter rows, from the entry's JSON Schemas."""
    if entry.has("parameters_schema") and entry.has("input_schema"):
        entry.error("input_schema", "give parameters_schema or input_schema, not both")
    schema_key = "input_schema" if entry.has("input_schema") else "parameters_schema"
    parameters = _schema_rows(entry, schema_key, parsed, "input")
    outputs = _schema_rows(entry, "output_schema", parsed, "output")
    return parameters, outputs


def _default_type(mcp_server: Any, configs: dict[str, Any]) -> str:
    """The type a new tool gets when the entry does not say: what its configs suggest."""
    if mcp_server is not MISSING:
        return ToolType.MCP
    if "module" in configs or "function" in configs:
        return ToolType.PYTHON
    if "base_url" in configs or "endpoint" in configs:
        return ToolType.HTTP
    return ToolType.PYTHON


def _given(value: Any) -> Any:
    return None if value is MISSING else value


def parse_tool(entry: Entry, parsed: Parsed, *, single: bool) -> ToolSpec | None:
    errors_before = len(parsed.errors)
    extras = extra_tool_fields()
    entry.report_unknown((SINGLE_TOOL_KEYS if single else CATALOG_TOOL_KEYS) | set(extras))
    name, tool_type = _tool_name_and_type(entry, single=single)
    fields = _tool_fields(entry, extras)
    if single:
        _apply_disable_parallel(entry, fields)
    metadata = _tool_metadata(entry)
    configs = _plain_configs(entry)
    secrets = _secret_configs(entry)
    for key in sorted(set(configs) & set(secrets)):
        entry.error(f"secret_configs/{key}", "is also listed under configs")
    _add_python_target(entry, configs)
    mcp_server = entry.string("mcp_server")
    remote = entry.string("remote_tool_name")
    if mcp_server is not MISSING and tool_type not in (MISSING, ToolType.MCP):
        entry.error("mcp_server", f"only tools of type 'mcp' have a server (type is {tool_type})")
    parameters, outputs = _tool_parameters(entry, parsed)
    if len(parsed.errors) > errors_before or name is MISSING:
        return None
    return ToolSpec(
        path=entry.path,
        document=entry.doc,
        name=name,
        type=_given(tool_type),
        default_type=_default_type(mcp_server, configs),
        fields=fields,
        metadata=metadata or None,
        parameters=_given(parameters),
        output_parameters=_given(outputs),
        configs=configs or None,
        secret_configs=secrets or None,
        mcp_server=_given(mcp_server),
        remote_tool_name=_given(remote),
    )


# --------------------------------------------------------------------------- MCP servers


def _server_transport(entry: Entry, fields: dict[str, Any]) -> None:
    """The transport as given (any alias), else what the url or command implies."""
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


def _server_env(entry: Entry, fields: dict[str, Any]) -> None:
    env = entry.mapping("env")
    if env is not MISSING:
        for key, value in env.items():
            if not isinstance(value, str):
                entry.error(f"env/{key}", "environment values must be strings (quote them)")
        fields["env"] = env


def _server_tool_lists(entry: Entry, fields: dict[str, Any]) -> None:
    if entry.has("provides_tools") and entry.has("tools_allowed"):
        entry.error("tools_allowed", "give provides_tools or tools_allowed, not both")
    for key, target in (
        ("provides_tools", "tools_allowed"),
        ("tools_allowed", "tools_allowed"),
        ("tools_denied", "tools_denied"),
    ):
        _set_given(fields, target, entry.string_list(key))


def _server_fields(entry: Entry) -> dict[str, Any]:
    """The server's own fields the entry gives (its auth apart)."""
    fields: dict[str, Any] = {}
    for key in ("description", "url", "command"):
        _set_given(fields, key, entry.string(key))
    _server_transport(entry, fields)
    _set_given(fields, "args", entry.string_list("args"))
    _server_env(entry, fields)
    _server_tool_lists(entry, fields)
    _set_given(fields, "timeout_seconds", entry.integer("timeout_seconds", minimum=1, maximum=3600))
    _set_given(
        fields, "max_concurrency", entry.integer("max_concurrency", minimum=1, nullable=True)
    )
    _set_given(fields, "is_enabled", entry.boolean("is_enabled"))
    return fields


def _server_auth(entry: Entry, parsed: Parsed, fields: dict[str, Any]) -> tuple[Any, bool]:
    """``auth:`` as (token to store or MISSING to keep, whether a token must be given);
    sets ``token_env_var`` in ``fields`` when the entry says where the token is."""
    auth = entry.mapping("auth")
    if auth is MISSING:
        return MISSING, False
    sub = Entry(entry.doc, entry.key_path("auth"), auth, parsed.errors, parsed.unknown)
    sub.report_unknown(AUTH_KEYS)
    kind = sub.string("type")
    kind = "bearer" if kind is MISSING else kind
    env_var = sub.string("token_env_var")
    secret = sub.string("token")
    if kind == "none":
        fields["token_env_var"] = ""
        return None, False
    if kind != "bearer":
        sub.error("type", "must be 'bearer' or 'none'")
        return MISSING, False
    if env_var is not MISSING and secret is not MISSING:
        sub.error("token", "give token_env_var or token, not both")
        return MISSING, False
    if env_var is not MISSING:
        fields["token_env_var"] = env_var
        return None, False
    if secret is not MISSING:
        fields["token_env_var"] = ""
        return secret, False
    return MISSING, True


def parse_server(entry: Entry, parsed: Parsed) -> ServerSpec | None:
    errors_before = len(parsed.errors)
    entry.report_unknown(SERVER_KEYS)
    name = entry.string("name", required=True)
    if name is not MISSING and not re.match(MCP_SERVER_NAME_PATTERN, name):
        entry.error("name", "use 1 to 40 characters: letters, digits, '_' or '-'")
    fields = _server_fields(entry)
    token, needs_token = _server_auth(entry, parsed, fields)
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
