"""An MCP server entry (in ``mcp_servers:``) read into a ``ServerSpec``."""

from __future__ import annotations

import re
from typing import Any

from registry.importers.catalog_files.fields import set_if_given
from registry.importers.catalog_files.parsed import Parsed
from registry.importers.specs import (
    MISSING,
    Entry,
    ServerSpec,
)
from registry.models.mcp import MCP_SERVER_NAME_PATTERN, MCPTransport
from registry.models.mcp.server import MCP_TOOL_PREFIX_PATTERN

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
    "tool_prefix",
}
AUTH_KEYS = {"type", "token_env_var", "token"}
TRANSPORT_ALIASES = {
    "streamable_http": MCPTransport.STREAMABLE_HTTP,
    "streamable-http": MCPTransport.STREAMABLE_HTTP,
    "http": MCPTransport.STREAMABLE_HTTP,
    "sse": MCPTransport.SSE,
    "stdio": MCPTransport.STDIO,
}


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
        set_if_given(fields, target, entry.string_list(key))


def _server_fields(entry: Entry) -> dict[str, Any]:
    """The server's own fields the entry gives (its auth apart)."""
    fields: dict[str, Any] = {}
    for key in ("description", "url", "command"):
        set_if_given(fields, key, entry.string(key))
    _server_transport(entry, fields)
    set_if_given(fields, "args", entry.string_list("args"))
    _server_env(entry, fields)
    _server_tool_lists(entry, fields)
    set_if_given(
        fields, "timeout_seconds", entry.integer("timeout_seconds", minimum=1, maximum=3600)
    )
    set_if_given(
        fields, "max_concurrency", entry.integer("max_concurrency", minimum=1, nullable=True)
    )
    set_if_given(fields, "is_enabled", entry.boolean("is_enabled"))
    prefix = entry.string("tool_prefix", nullable=True)
    if isinstance(prefix, str) and not re.match(MCP_TOOL_PREFIX_PATTERN, prefix):
        entry.error("tool_prefix", "use at most 40 characters: letters, digits, '_' or '-'")
    set_if_given(fields, "tool_prefix", prefix)
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
